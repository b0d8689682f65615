package grpo

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
)

// jsonKeys returns the JSON keys of struct type typ, those of nested structs dotted (publish.mode), sorted.
func jsonKeys(typ reflect.Type, prefix string) []string {
	var keys []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, jsonKeys(f.Type, prefix+name+".")...)
			continue
		}
		keys = append(keys, prefix+name)
	}
	sort.Strings(keys)
	return keys
}

// pythonTrainConfigKeys lists the fields of the embedded trainer's TrainConfig dataclass, nested dataclasses
// dotted, with the trainer's standard-library side only (spade_trainer.config imports no torch).
const pythonTrainConfigKeys = `
import dataclasses, json
from spade_trainer.config import TrainConfig

def keys(cls, prefix):
    out = []
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(f.type):
            out += keys(f.type, prefix + f.name + ".")
        else:
            out.append(prefix + f.name)
    return out

print(json.dumps(sorted(keys(TrainConfig, ""))))
`

// TestTrainerConfigKeysMatchPython holds the Go and Python lists of trainer keys equal: a key only Go
// writes is refused by the trainer, and one only Python declares is missing from every run.
func TestTrainerConfigKeysMatchPython(t *testing.T) {
	python := pythonWith(t, "json", "dataclasses")
	dir := t.TempDir()
	if err := extractTrainer(dir); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-c", pythonTrainConfigKeys)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = exit.Stderr
		}
		t.Fatalf("%s: %v\n%s", python, err, stderr)
	}
	var pythonKeys []string
	if err := json.Unmarshal(out, &pythonKeys); err != nil {
		t.Fatalf("python printed %q: %v", out, err)
	}
	goKeys := jsonKeys(reflect.TypeOf(trainerConfig{}), "")
	if len(goKeys) == 0 {
		t.Fatal("trainerConfig has no JSON keys")
	}
	if !slices.Equal(goKeys, pythonKeys) {
		t.Errorf("trainer keys differ:\n only in Go (trainerConfig): %v\n only in Python (TrainConfig): %v",
			missingFrom(pythonKeys, goKeys), missingFrom(goKeys, pythonKeys))
	}
}

// missingFrom returns the keys of have that want lacks.
func missingFrom(want, have []string) []string {
	var out []string
	for _, k := range have {
		if !slices.Contains(want, k) {
			out = append(out, k)
		}
	}
	return out
}

// TestTrainerConfigOfThePreset checks that the trainer tests' complete config (trainer_config in
// trainer/tests/helpers.py) is what settings writes for the qwen3-30b-a3b-games preset, so the Python
// tests run on the preset's values.
func TestTrainerConfigOfThePreset(t *testing.T) {
	python := trainerPython(t)
	cfg, err := config.Preset("qwen3-30b-a3b-games")
	if err != nil {
		t.Fatal(err)
	}
	// The placeholders of helpers.py: the server the preset takes from $OPENAI_BASE_URL, and paths.
	cfg.LLM.Agent.BaseURL = "http://127.0.0.1:30000/v1"
	cfg.GRPO.ModelPath = "/models/qwen3-30b-a3b"
	cfg.GRPO.CheckpointDir = "/checkpoints/spade"
	settings, err := (&torchTrainer{opts: TrainerOptions{Config: cfg, Run: "spade"}}).settings(1)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(settings)
	var want map[string]any
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}

	tests, err := filepath.Abs(filepath.Join("trainer", "tests"))
	if err != nil {
		t.Fatal(err)
	}
	script := "import json, sys; sys.path.insert(0, sys.argv[1]); import helpers; print(json.dumps(helpers.trainer_config()))"
	out, err := exec.Command(python, "-c", script, tests).Output()
	if err != nil {
		t.Fatalf("%s: %v", python, err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python printed %q: %v", out, err)
	}
	for _, key := range jsonKeys(reflect.TypeOf(trainerConfig{}), "") {
		if g, w := lookup(got, key), lookup(want, key); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: helpers.trainer_config has %v, the preset writes %v", key, g, w)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("helpers.trainer_config() = %s\nthe preset writes       %s", out, body)
	}
}

// lookup returns the value at a dotted key of decoded JSON (nil when absent).
func lookup(m map[string]any, key string) any {
	first, rest, nested := strings.Cut(key, ".")
	if !nested {
		return m[first]
	}
	inner, _ := m[first].(map[string]any)
	return lookup(inner, rest)
}
