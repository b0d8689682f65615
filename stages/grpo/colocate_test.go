package grpo

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/chattemplate/chattemplatetest"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// timedTrainer is the resident trainer with the times its updates started and ended.
type timedTrainer struct {
	*residentTrainer
	mu            sync.Mutex
	started, done []time.Time
}

func (r *timedTrainer) Train(ctx context.Context, step int64, rows []schemas.GRPOBatchRow) ([]schemas.TrainMetricsRow, error) {
	r.mu.Lock()
	r.started = append(r.started, time.Now())
	r.mu.Unlock()
	out, err := r.residentTrainer.Train(ctx, step, rows)
	r.mu.Lock()
	r.done = append(r.done, time.Now())
	r.mu.Unlock()
	return out, err
}

// chatOnce is one sampling call of the next step's rollout.
func chatOnce(t *testing.T, url string) {
	t.Helper()
	body := `{"model": "m", "messages": [{"role": "user", "content": "play"}], "max_tokens": 8}`
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat call: HTTP %d", resp.StatusCode)
	}
}

// colocatedConfig is the resident tiny trainer colocated with the given servers, publishing to SGLang.
func colocatedConfig(t *testing.T, python, root, servers string) *config.Config {
	cfg := residentConfig(t, python, root, 2)
	cfg.GRPO.Placement, cfg.GRPO.Publish, cfg.GRPO.PublishURLs = config.PlacementColocated, config.PublishSGLang, servers
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestColocatedStepsReleaseTheServersAroundTheUpdate(t *testing.T) {
	python := trainerPython(t)
	root := t.TempDir()
	tok := chattemplatetest.Start(t, chattemplatetest.NonThinking)
	ok := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "OK"} }
	emus := []*llmtest.Emulator{
		llmtest.StartEmulator(t, tok, ok, llmtest.EmulatorOptions{Layout: llmtest.LayoutSGLang, MemoryRoutes: true}, "m"),
		llmtest.StartEmulator(t, tok, ok, llmtest.EmulatorOptions{Layout: llmtest.LayoutSGLang, MemoryRoutes: true}, "m"),
	}
	cfg := colocatedConfig(t, python, root, emus[0].URL+","+emus[1].URL)
	lk := laketest.Open(t, filepath.Join(root, "lake"))
	laketest.NewRun(t, lk, "co", cfg)
	commitBatches(t, lk, "co", 3, func(s int64) []schemas.GRPOBatchRow { return sampleRows(s, 4, 2) })
	env := testEnv(t, lk, "co", shard.All)
	var log bytes.Buffer
	env.TrainerLog = &log
	built, err := NewTrainer(TrainerOptions{Config: cfg, Run: "co", Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	rec := &timedTrainer{residentTrainer: built.(*residentTrainer)}
	defer rec.Close()
	for step := int64(0); step < 3; step++ {
		if _, err := stage.Within(context.Background(), env, stage.GRPO, step, func(ctx context.Context, env *stage.Env, step int64) (Result, error) { return Run(ctx, env, step, rec) }); err != nil {
			t.Fatalf("step %d: %v\nlog:\n%s", step, err, log.String())
		}
		// Step step+1's rollout: every server serves it with the weights step published.
		want := filepath.Join(cfg.GRPO.CheckpointDir, fmt.Sprintf("co-step%06d", step))
		for i, emu := range emus {
			chatOnce(t, emu.URL)
			served := emu.ServedWeights()
			if got := served[len(served)-1]; got != want {
				t.Fatalf("step %d: server %d served the next step's call with %q, want %q", step, i, got, want)
			}
		}
	}
	for i, emu := range emus {
		if n := emu.CallsWhileReleased(); n != 0 {
			t.Errorf("server %d: %d calls arrived while it was released", i, n)
		}
		events := emu.MemoryEvents()
		if len(events) != 9 {
			t.Fatalf("server %d: want release, resume, load per step (9 requests), got %+v", i, events)
		}
		for s := 0; s < 3; s++ {
			release, resume, load := events[3*s], events[3*s+1], events[3*s+2]
			if release.Route != "/release_memory_occupation" || resume.Route != "/resume_memory_occupation" || load.Route != "/update_weights_from_disk" {
				t.Fatalf("server %d step %d: sequence %s, %s, %s", i, s, release.Route, resume.Route, load.Route)
			}
			if release.InFlight != 0 {
				t.Errorf("server %d step %d: released with %d calls in flight", i, s, release.InFlight)
			}
			// The trainer starts only after every server has released, and the servers resume only
			// after it ends.
			if !release.At.Before(rec.started[s]) || !resume.At.After(rec.done[s]) {
				t.Errorf("server %d step %d: released %v, trainer %v–%v, resumed %v", i, s, release.At, rec.started[s], rec.done[s], resume.At)
			}
		}
	}
}

func TestColocatedStepFailsOnAServerWithoutTheMemoryRoutes(t *testing.T) {
	python := trainerPython(t)
	root := t.TempDir()
	tok := chattemplatetest.Start(t, chattemplatetest.NonThinking)
	ok := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "OK"} }
	with := llmtest.StartEmulator(t, tok, ok, llmtest.EmulatorOptions{Layout: llmtest.LayoutSGLang, MemoryRoutes: true}, "m")
	without := llmtest.StartEmulator(t, tok, ok, llmtest.EmulatorOptions{Layout: llmtest.LayoutSGLang}, "m")
	cfg := colocatedConfig(t, python, root, with.URL+","+without.URL)
	lk := laketest.Open(t, filepath.Join(root, "lake"))
	laketest.NewRun(t, lk, "co", cfg)
	commitBatches(t, lk, "co", 1, func(s int64) []schemas.GRPOBatchRow { return sampleRows(s, 4, 2) })
	env := testEnv(t, lk, "co", shard.All)
	built, err := NewTrainer(TrainerOptions{Config: cfg, Run: "co"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &timedTrainer{residentTrainer: built.(*residentTrainer)}
	defer rec.Close()
	_, err = stage.Within(context.Background(), env, stage.GRPO, 0, func(ctx context.Context, env *stage.Env, step int64) (Result, error) { return Run(ctx, env, step, rec) })
	if err == nil || !strings.Contains(err.Error(), "--enable-memory-saver") || !strings.Contains(err.Error(), "/release_memory_occupation") ||
		strings.Contains(err.Error(), "\n") {
		t.Fatalf("want one line naming the route and the flag, got %v", err)
	}
	if len(rec.started) != 0 {
		t.Fatal("the trainer started although a server could not release its memory")
	}
	// The server that had released took its memory back.
	events := with.MemoryEvents()
	if len(events) != 2 || events[1].Route != "/resume_memory_occupation" {
		t.Fatalf("the released server was not resumed: %+v", events)
	}
	if committed, _ := lk.Committed(context.Background(), lake.PartitionKey{Run: "co", Table: schemas.TrainMetricsSpec.Name, Step: 0}); committed {
		t.Fatal("train_metrics committed for a failed step")
	}
}

func TestMemoryRoutesOfVLLM(t *testing.T) {
	tok := chattemplatetest.Start(t, chattemplatetest.NonThinking)
	ok := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "OK"} }
	emu := llmtest.StartEmulator(t, tok, ok, llmtest.EmulatorOptions{MemoryRoutes: true}, "m")
	release, resume := memoryRoutes(config.PublishVLLMReload)
	ctx := context.Background()
	for _, r := range release {
		if err := postMemoryRoute(ctx, emu.URL, r); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(emu.URL+"/chat/completions", "application/json", strings.NewReader(`{"model": "m", "messages": [{"role": "user", "content": "x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || emu.CallsWhileReleased() != 1 {
		t.Fatalf("a call to a sleeping vLLM: HTTP %d", resp.StatusCode)
	}
	for _, r := range resume {
		if err := postMemoryRoute(ctx, emu.URL, r); err != nil {
			t.Fatal(err)
		}
	}
	chatOnce(t, emu.URL)
	var routes []string
	for _, e := range emu.MemoryEvents() {
		routes = append(routes, e.Route)
	}
	if got := strings.Join(routes, " "); got != "/sleep?level=1 /wake_up?tags=weights /wake_up?tags=kv_cache" {
		t.Fatalf("vLLM sequence %q", got)
	}
	plain := llmtest.StartEmulator(t, tok, ok, llmtest.EmulatorOptions{}, "m")
	if err := postMemoryRoute(ctx, plain.URL, release[0]); err == nil || !strings.Contains(err.Error(), "--enable-sleep-mode") {
		t.Fatalf("vLLM without sleep mode: %v", err)
	}
}
