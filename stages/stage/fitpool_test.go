package stage_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/stages/stage"
)

// TestFitPoolFollowsTheStepOrNamesSandboxWorkers: sandbox.workers 0 raises the pool to a worker per
// program; workers whose memory does not fit are one line naming sandbox.workers and how many fit; a set
// sandbox.workers stays as it is.
func TestFitPoolFollowsTheStepOrNamesSandboxWorkers(t *testing.T) {
	cfg, err := config.Preset("qwen3-30b-a3b-games")
	if err != nil {
		t.Fatal(err)
	}
	python := os.Getenv(sandbox.PythonEnv)
	if python == "" {
		python = "/usr/bin/python3"
	}
	newPool := func(mutate func(*sandbox.Options)) *sandbox.Pool {
		opts := stage.SandboxOptions(cfg)
		opts.Python = python
		mutate(&opts)
		p, err := sandbox.NewPool(context.Background(), opts)
		if err != nil {
			t.Fatalf("sandbox pool: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	if cfg.Sandbox.Workers != 0 || !stage.SandboxOptions(cfg).FollowStep {
		t.Fatalf("the preset's sandbox.workers is %d, want 0 (follow the step)", cfg.Sandbox.Workers)
	}
	if n, err := stage.FitPool(newPool(func(*sandbox.Options) {}), 24, 24); err != nil || n != 24 {
		t.Fatalf("FitPool(24 envs of 24 plays) = %d, %v; want 24 workers", n, err)
	}
	_, err = stage.FitPool(newPool(func(o *sandbox.Options) { o.InstanceMemory = 1 << 50 }), 24, 24)
	if !errors.Is(err, sandbox.ErrWorkersMemory) || !strings.Contains(err.Error(), "sandbox.workers") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("FitPool beyond the machine's memory: %v; want one line naming sandbox.workers", err)
	}
	cfg.Sandbox.Workers = 3
	if n, err := stage.FitPool(newPool(func(*sandbox.Options) {}), 24, 24); err != nil || n != 3 {
		t.Fatalf("FitPool with sandbox.workers 3 = %d, %v; want 3", n, err)
	}
}
