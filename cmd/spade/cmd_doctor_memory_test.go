package main

import (
	"strings"
	"testing"
)

// TestDoctorEstimatesThePresetsMemory: doctor --preset prints the servers' share and one trainer line per
// setting, marks the preset's, and exits 1 with one line when nothing fits.
func TestDoctorEstimatesThePresetsMemory(t *testing.T) {
	r := spade(t, nil, "", "doctor", "--preset", "qwen3-30b-a3b-games", "--gpus", "8", "--gpu-memory", "141")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"30.53B parameters", "servers:   tp 8: weights 7.1 GiB per GPU", "cpu_offload"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in:\n%s", want, r.stdout)
		}
	}
	var preset string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasSuffix(line, "<- the preset") {
			preset = line
		}
	}
	// The 30B preset: bf16 weights and gradients over 8 GPUs, the optimizer in host memory.
	if f := strings.Fields(preset); len(f) < 13 || f[0] != "bfloat16" || f[1] != "optimizer" || f[2] != "8" || f[5] != "0.0" || f[11] != "yes" {
		t.Fatalf("the preset's line %q", preset)
	}
	r = spade(t, nil, "", "doctor", "--preset", "qwen3-30b-a3b-games", "--gpus", "1", "--gpu-memory", "24")
	if r.code != 1 || !strings.Contains(r.stderr, "no trainer setting fits") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("a node too small: exit %d, stderr %q", r.code, r.stderr)
	}
	r = spade(t, nil, "", "doctor", "--preset", "llama-games")
	if r.code == 0 || !strings.Contains(r.stderr, "unknown preset") {
		t.Fatalf("unknown preset: exit %d, stderr %q", r.code, r.stderr)
	}
}
