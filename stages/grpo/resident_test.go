package grpo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

func TestFullCheckpointAfter(t *testing.T) {
	// save_every 4: steps 3, 7, 11 (step + 1 a multiple of 4); save_every 1: every step.
	var got []int64
	for s := int64(0); s < 12; s++ {
		if fullCheckpointAfter(s, 4) {
			got = append(got, s)
		}
	}
	if fmt.Sprint(got) != "[3 7 11]" {
		t.Fatalf("save_every 4: full checkpoints after %v, want [3 7 11]", got)
	}
	if !fullCheckpointAfter(0, 1) || !fullCheckpointAfter(5, 1) || fullCheckpointAfter(5, 0) {
		t.Fatal("save_every 1 checkpoints every step; 0 never")
	}
}

// commitBatches commits sampleRows of steps 0..steps-1 as the run's grpo_batches, so the stage trains
// them as it would after a crash between commit and training.
func commitBatches(t testing.TB, lk *lake.Lake, run string, steps int, rowsOf func(step int64) []schemas.GRPOBatchRow) {
	t.Helper()
	for s := int64(0); s < int64(steps); s++ {
		if _, err := laketest.Commit(context.Background(), lk, partition(run, schemas.GRPOBatchesSpec.Name, s), rowsOf(s), lake.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// runStageSteps runs the grpo stage at each step with one Env (its resident trainer kept between them)
// and returns the Env, not closed.
func runStageSteps(t testing.TB, lk *lake.Lake, run string, steps []int64, log *bytes.Buffer) *stage.Env {
	t.Helper()
	env := testEnv(t, lk, run, shard.All)
	env.TrainerLog = log
	for _, s := range steps {
		res, err := stage.Within(context.Background(), env, stage.GRPO, s, func(ctx context.Context, env *stage.Env, step int64) (Result, error) { return Run(ctx, env, step, nil) })
		if err != nil {
			t.Fatalf("step %d: %v\nlog:\n%s", s, err, log.String())
		}
		if !res.Trained || len(res.Metrics) == 0 || res.Metrics[0].WeightsVersion != fmt.Sprintf("%s-step%06d", run, s) {
			t.Fatalf("step %d: %+v", s, res)
		}
	}
	return env
}

// sameWeights compares two tiny-model state dicts (model.pt) tensor by tensor, bit for bit.
func sameWeights(t testing.TB, python, a, b string) string {
	t.Helper()
	script := `import sys, torch
x, y = torch.load(sys.argv[1]), torch.load(sys.argv[2])
bad = [k for k in x if not torch.equal(x[k], y[k])]
print("equal" if not bad and x.keys() == y.keys() else "differ: " + ", ".join(bad[:5]))`
	out, err := exec.Command(python, "-c", script, a, b).CombinedOutput()
	if err != nil {
		t.Fatalf("compare %s %s: %v: %s", a, b, err, out)
	}
	return strings.TrimSpace(string(out))
}

// residentConfig is torchConfig under the resident trainer with the given checkpoint interval.
func residentConfig(t *testing.T, python, root string, saveEvery int) *config.Config {
	cfg := torchConfig(t, python, root)
	cfg.GRPO.TrainerMode, cfg.GRPO.SaveEvery = config.TrainerResident, saveEvery
	return cfg
}

func TestResidentTrainerMatchesPerStepProcesses(t *testing.T) {
	python := trainerPython(t)
	root := t.TempDir()
	ctx := context.Background()
	steps := []int64{0, 1, 2}
	weights := map[config.TrainerMode]string{}
	for _, mode := range []config.TrainerMode{config.TrainerPerStep, config.TrainerResident} {
		cfg := residentConfig(t, python, filepath.Join(root, string(mode)), 2)
		cfg.GRPO.TrainerMode = mode
		var log bytes.Buffer
		tr, err := NewTrainer(TrainerOptions{Config: cfg, Run: "m", Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			if _, err := tr.Train(ctx, s, sampleRows(s, 4, 2)); err != nil {
				t.Fatalf("%s step %d: %v\nlog:\n%s", mode, s, err, log.String())
			}
		}
		if mode == config.TrainerResident {
			// Step 2 is between checkpoints: its version holds weights only, no optimizer state.
			if _, err := os.Stat(filepath.Join(cfg.GRPO.CheckpointDir, "m-step000002", "trainer", "optimizer.pt")); !os.IsNotExist(err) {
				t.Fatalf("step 2 wrote optimizer state between full checkpoints (%v)", err)
			}
			if _, err := os.Stat(filepath.Join(cfg.GRPO.CheckpointDir, "m-step000001", "trainer", "optimizer.pt")); err != nil {
				t.Fatalf("step 1 (save_every 2) has no full checkpoint: %v", err)
			}
			if err := tr.(*residentTrainer).Close(); err != nil {
				t.Fatal(err)
			}
			// Closing wrote the last step's full checkpoint.
			if _, err := os.Stat(filepath.Join(cfg.GRPO.CheckpointDir, "m-step000002", "trainer", "optimizer.pt")); err != nil {
				t.Fatalf("close wrote no final checkpoint: %v", err)
			}
		}
		weights[mode] = filepath.Join(cfg.GRPO.CheckpointDir, "m-step000002", "model.pt")
	}
	if got := sameWeights(t, python, weights[config.TrainerPerStep], weights[config.TrainerResident]); got != "equal" {
		t.Fatalf("the resident trainer's weights after 3 steps differ from a process per step: %s", got)
	}
}

func TestResidentTrainerResumesAfterAKillToTheSameWeights(t *testing.T) {
	python := trainerPython(t)
	root := t.TempDir()
	lk := laketest.Open(t, filepath.Join(root, "lake"))
	rowsOf := func(s int64) []schemas.GRPOBatchRow { return sampleRows(s, 4, 2) }
	final := map[string]string{}
	for _, run := range []string{"whole", "killed"} {
		cfg := residentConfig(t, python, filepath.Join(root, run), 2)
		// bfloat16 weights with the float32 master and Adam in host memory: the state a resume must restore.
		cfg.GRPO.ParamDType, cfg.GRPO.CPUOffload = config.ParamBFloat16, config.OffloadOptimizer
		laketest.NewRun(t, lk, run, cfg)
		commitBatches(t, lk, run, 5, rowsOf)
		var log bytes.Buffer
		if run == "whole" {
			env := runStageSteps(t, lk, run, []int64{0, 1, 2, 3, 4}, &log)
			if err := env.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			env := runStageSteps(t, lk, run, []int64{0, 1, 2}, &log)
			// A crash after step 2, whose weights were published but whose state is past the last full
			// checkpoint (step 1).
			kept, err := env.Keep("grpo.trainer", nil)
			if err != nil {
				t.Fatal(err)
			}
			kept.(*residentTrainer).Kill()
			log.Reset()
			env = runStageSteps(t, lk, run, []int64{3, 4}, &log)
			if !strings.Contains(log.String(), "step 2: re-trained from its batch") {
				t.Fatalf("the restarted trainer did not re-train step 2 from the lake:\n%s", log.String())
			}
			if err := env.Close(); err != nil {
				t.Fatal(err)
			}
		}
		final[run] = filepath.Join(cfg.GRPO.CheckpointDir, run+"-step000004", "model.pt")
	}
	if got := sameWeights(t, python, final["whole"], final["killed"]); got != "equal" {
		t.Fatalf("resumed after a kill, step 4's weights differ from the uninterrupted run's: %s", got)
	}
}

// BenchmarkResidentTrainer runs 10 steps of the grpo stage (batches committed in a lake) with the CPU
// trainer on a 51M-parameter tiny decoder, once with a process per step and once resident (grpo.save_every
// 10: one full checkpoint, at the end), and reports the per-step wall time of each and their ratio, and
// the bytes the trainer read and wrote per step (/proc/self/io) in each mode. Run with -benchtime=1x.
func BenchmarkResidentTrainer(b *testing.B) {
	python := trainerPython(b)
	b.Setenv("CUDA_VISIBLE_DEVICES", "")
	const steps = 10
	tiny := `{"vocab_size": 1024, "hidden_size": 512, "num_layers": 16, "num_heads": 8, "intermediate_size": 2048, "max_positions": 64}`
	rowsOf := func(s int64) []schemas.GRPOBatchRow {
		rows := sampleRows(s, 4, 0)
		for i := range rows {
			rows[i].Batch = 0
		}
		return rows
	}
	for i := 0; i < b.N; i++ {
		perStep := map[config.TrainerMode]time.Duration{}
		read, written := map[config.TrainerMode]int64{}, map[config.TrainerMode]int64{}
		for _, mode := range []config.TrainerMode{config.TrainerPerStep, config.TrainerResident} {
			root := b.TempDir()
			lk := laketest.Open(b, filepath.Join(root, "lake"))
			model := filepath.Join(root, "model")
			if err := os.MkdirAll(model, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(model, "spade_tiny.json"), []byte(tiny), 0o644); err != nil {
				b.Fatal(err)
			}
			cfg := config.Default()
			cfg.GRPO.Trainer, cfg.GRPO.Python, cfg.GRPO.Publish, cfg.GRPO.ModelPath = config.TrainerTorch, python, config.PublishNone, model
			cfg.GRPO.CheckpointDir, cfg.GRPO.KLBeta, cfg.GRPO.MixRoles = filepath.Join(root, "ckpt"), 0, false
			cfg.GRPO.TrainerMode, cfg.GRPO.SaveEvery = mode, steps
			cfg.GRPO.ParamDType, cfg.GRPO.CPUOffload, cfg.GRPO.Placement = config.ParamFloat32, config.OffloadNone, config.PlacementSeparate
			if err := cfg.Validate(); err != nil {
				b.Fatal(err)
			}
			laketest.NewRun(b, lk, "bench", cfg)
			commitBatches(b, lk, "bench", steps, rowsOf)
			env := testEnv(b, lk, "bench", shard.All)
			var log bytes.Buffer
			env.TrainerLog, env.TrainerDir = &log, filepath.Join(root, "work")
			started := time.Now()
			for s := int64(0); s < steps; s++ {
				res, err := stage.Within(context.Background(), env, stage.GRPO, s, func(ctx context.Context, env *stage.Env, step int64) (Result, error) { return Run(ctx, env, step, nil) })
				if err != nil {
					b.Fatalf("%s step %d: %v\nlog:\n%s", mode, s, err, log.String())
				}
				if len(res.Metrics) != 1 {
					b.Fatalf("%s step %d: %+v", mode, s, res)
				}
				var perf metricsLine
				if mode == config.TrainerResident {
					kept, _ := env.Keep("grpo.trainer", nil)
					perf = kept.(*residentTrainer).lastLines[0]
				} else {
					perf = readUpdatePerformance(b, env.TrainerDir, s)
				}
				read[mode] += perf.IOReadBytes
				written[mode] += perf.IOWrittenBytes
			}
			if err := env.Close(); err != nil {
				b.Fatal(err)
			}
			perStep[mode] = time.Since(started) / steps
		}
		ratio := perStep[config.TrainerResident].Seconds() / perStep[config.TrainerPerStep].Seconds()
		b.ReportMetric(perStep[config.TrainerPerStep].Seconds(), "per_step-s/step")
		b.ReportMetric(perStep[config.TrainerResident].Seconds(), "resident-s/step")
		b.ReportMetric(ratio, "resident/per_step")
		for _, mode := range []config.TrainerMode{config.TrainerPerStep, config.TrainerResident} {
			b.ReportMetric(float64(read[mode])/steps/(1<<20), string(mode)+"-read-MiB/step")
			b.ReportMetric(float64(written[mode])/steps/(1<<20), string(mode)+"-written-MiB/step")
		}
	}
}
