package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spadekit/spade/internal/llm"
)

// startTestServer makes a model (no warm start) in a temporary directory and serves it.
func startTestServer(t *testing.T) (*Server, string) {
	t.Helper()
	python := labPython(t)
	work := t.TempDir()
	py := filepath.Join(work, "py")
	if err := writeSources(work, py); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(work, "model")
	cmd := exec.Command(python, filepath.Join(py, "spade_lab_server.py"), "init", model, "--seed", "5", "--warm-steps", "0")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+py)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	srv, err := StartServer(context.Background(), python, py, model, filepath.Join(work, "calls.jsonl"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv, model
}

func post(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestServerPassesDoctor: every check of `spade doctor --llm URL --publish sglang` passes against the lab
// server, and it is read as SGLang.
func TestServerPassesDoctor(t *testing.T) {
	srv, _ := startTestServer(t)
	findings := llm.Diagnose(context.Background(), llm.DiagnoseOptions{BaseURL: srv.URL + "/v1", Publish: "sglang"})
	if len(findings) < 6 {
		t.Fatalf("%d findings, want every check: %+v", len(findings), findings)
	}
	for _, f := range findings {
		if !f.OK {
			t.Errorf("doctor check %s failed: %s (%s)", f.Check, f.Detail, f.Fix)
		}
	}
}

// TestServerSamplesBySeedAndLoadsWhatItIsGiven: /generate with the same seed answers the same ids and
// log-probs, another seed (at temperature 1 over a random decoder) other ids; top_k 1 is greedy, every
// log-prob a log of a probability; a publish of a directory without weights is refused and leaves the
// served version; a publish of the trainer's format is served under the directory's name, with the
// checksum of its file, and every later call is logged with it.
func TestServerSamplesBySeedAndLoadsWhatItIsGiven(t *testing.T) {
	srv, model := startTestServer(t)
	generate := func(seed int, topK int) ([]any, []any) {
		status, out := post(t, srv.URL+"/generate", map[string]any{"input_ids": []int{260, 263, 258, 10, 261}, "return_logprob": true,
			"sampling_params": map[string]any{"max_new_tokens": 6, "temperature": 1.0, "top_p": 1.0, "top_k": topK, "sampling_seed": seed}})
		if status != http.StatusOK {
			t.Fatalf("/generate: %d %v", status, out)
		}
		meta := out["meta_info"].(map[string]any)
		return out["output_ids"].([]any), meta["output_token_logprobs"].([]any)
	}
	ids1, lps1 := generate(11, 0)
	ids2, lps2 := generate(11, 0)
	if !slices.Equal(ids1, ids2) || len(lps1) != len(ids1) {
		t.Fatalf("seed 11 twice: %v then %v", ids1, ids2)
	}
	for i := range lps1 {
		a, b := lps1[i].([]any), lps2[i].([]any)
		if a[0] != b[0] || a[0].(float64) > 0 {
			t.Errorf("token %d: log-probs %v and %v, want equal and <= 0", i, a[0], b[0])
		}
	}
	differs := false
	for seed := 12; seed < 20 && !differs; seed++ {
		ids, _ := generate(seed, 0)
		differs = !slices.Equal(ids, ids1)
	}
	if !differs {
		t.Error("eight other seeds all sampled the same ids as seed 11")
	}
	greedy1, _ := generate(1, 1)
	greedy2, _ := generate(2, 1)
	if !slices.Equal(greedy1, greedy2) {
		t.Errorf("top_k 1 under two seeds: %v and %v, want the same greedy ids", greedy1, greedy2)
	}

	before, err := srv.Info()
	if err != nil {
		t.Fatal(err)
	}
	if before.WeightsVersion != ModelName {
		t.Errorf("served version %q before any publish, want %q", before.WeightsVersion, ModelName)
	}
	if status, out := post(t, srv.URL+"/update_weights_from_disk", map[string]any{"model_path": t.TempDir()}); status == http.StatusOK || out["success"] != false {
		t.Errorf("publish of an empty directory: %d %v, want refused", status, out)
	}
	version := filepath.Join(t.TempDir(), "r-step000007")
	if err := os.MkdirAll(version, 0o755); err != nil {
		t.Fatal(err)
	}
	weights, err := os.ReadFile(filepath.Join(model, "model.pt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(version, "model.pt"), weights, 0o644); err != nil {
		t.Fatal(err)
	}
	srv.TakeCalls()
	if status, out := post(t, srv.URL+"/update_weights_from_disk", map[string]any{"model_path": version}); status != http.StatusOK || out["success"] != true {
		t.Fatalf("publish: %d %v", status, out)
	}
	after, err := srv.Info()
	if err != nil {
		t.Fatal(err)
	}
	want, err := FileSHA256(filepath.Join(version, "model.pt"))
	if err != nil {
		t.Fatal(err)
	}
	if after.WeightsVersion != "r-step000007" || after.WeightsSHA256 != want {
		t.Errorf("after publish: version %q sha256 %q, want r-step000007 and %q", after.WeightsVersion, after.WeightsSHA256, want)
	}
	generate(3, 0)
	calls := srv.TakeCalls()
	if len(calls) != 1 || calls[0].WeightsVersion != "r-step000007" || calls[0].WeightsSHA256 != want || calls[0].Seed != 3 {
		t.Errorf("calls after the publish: %+v, want one of seed 3 on r-step000007", calls)
	}
}
