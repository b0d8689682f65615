package rollout_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/rollout"
	"github.com/spadekit/spade/stages/stage"
)

// fourStepEnv ends every play at its fourth step, so a play is four Agent calls.
const fourStepEnv = `class FourSteps:
    def reset(self, seed):
        self.n = 0
        return "Answer with <action>N</action>."

    def step(self, action):
        self.n += 1
        return "step %d" % self.n, 0.0, self.n >= 4, {}
`

// BenchmarkRolloutSaturation plays a pool's first step at the paper's shape (24 envs × (8 unhinted + 16
// hinted) = 576 plays of 4 Agent calls each) against a stand-in server that takes 2 s per call, with
// the qwen3-30b-a3b-games preset's defaults (sandbox.workers, llm.max_in_flight,
// llm.server_max_in_flight), through the real sandbox and a local lake. The reference, measured in the
// same run, is the critical path: a step of one play of one env (4 calls in a row). Reported: the step's
// wall ÷ the reference (goal ≤ 1.25), the workers and the most plays in flight, the calls in flight over
// time (calls_p50/calls_max, sampled every 250 ms, and a timeline in the log), the peak resident memory
// of the process and of its sandbox processes, that memory per worker, and the fall of the machine's
// MemAvailable during the step (other processes of the machine move it too). Sub-benchmark preset has
// the preset's defaults; waves8 the earlier defaults (sandbox.workers 8, llm.max_in_flight 256), for
// comparison in the same run.
func BenchmarkRolloutSaturation(b *testing.B) {
	b.Run("preset", func(b *testing.B) { rolloutSaturation(b, nil) })
	b.Run("waves8", func(b *testing.B) {
		rolloutSaturation(b, func(c *config.Config) { c.Sandbox.Workers, c.LLM.MaxInFlight = 8, 256 })
	})
}

func rolloutSaturation(b *testing.B, mutate func(*config.Config)) {
	ctx := context.Background()
	const delay = 2 * time.Second
	srv := llmtest.NewServer(func(*llm.ChatRequestBody) llmtest.Reply {
		return llmtest.Reply{Text: "Let me try: \\boxed{1}", Delay: delay}
	}, agentModel)
	defer srv.Close()
	srv.KeepRequests(false)
	cfg, err := config.Preset("qwen3-30b-a3b-games")
	if err != nil {
		b.Fatal(err)
	}
	cfg.LLM.Agent.BaseURL, cfg.LLM.Agent.Model = srv.URL, agentModel
	if cfg.Sandbox.Python == "" {
		cfg.Sandbox.Python = os.Getenv(sandbox.PythonEnv)
	}
	if mutate != nil {
		mutate(cfg)
	}
	lk := laketest.New(b)
	envs := make([]schemas.EnvRow, 24)
	for i := range envs {
		envs[i] = envRow(0, i, fmt.Sprintf("# env %d\n%s", i, fourStepEnv), "count", schemas.Skills[i%6], "games")
	}
	refresh := int64(max(cfg.Sample.RefreshEvery, 1))
	writePool := func(run string, step int64, rows []schemas.EnvRow) {
		out := make([]schemas.EnvRow, len(rows))
		for i, e := range rows {
			e.Step, e.PoolStep = step, step
			out[i] = e
		}
		laketest.Write(b, lk, lake.PartitionKey{Run: run, Table: "envs", Step: step}, out)
	}
	newEnv := func(run string, c *config.Config) *stage.Env {
		laketest.NewRun(b, lk, run, c)
		client, err := llm.New(ctx, llm.SettingsFromConfig(c, ""), nil)
		if err != nil {
			b.Fatal(err)
		}
		pool, err := sandbox.NewPool(ctx, stage.SandboxOptions(c))
		if err != nil {
			b.Fatalf("sandbox pool: %v", err)
		}
		b.Cleanup(func() { pool.Close() })
		env, err := stage.NewEnv(ctx, lk, run, nil)
		if err != nil {
			b.Fatal(err)
		}
		env.SetClient(client)
		env.SetPool(pool)
		return env
	}

	// The critical path: one play of one env.
	one := *cfg
	one.Rollout.GroupSize, one.Rollout.HintedGroupSize = 1, 0
	refEnv := newEnv("ref", &one)
	writePool("ref", 0, envs[:1])
	t0 := time.Now()
	if res, err := stage.Within(ctx, refEnv, stage.Rollout, 0, rollout.Run); err != nil || res.Turns != 4 {
		b.Fatalf("reference step: %v (%d turns, want 4; ended by %v)", err, res.Turns, res.EndedBy)
	}
	critical := time.Since(t0)

	env := newEnv("bench", cfg)
	_, client, err := env.Client(ctx, 0, schemas.RoleAgent)
	if err != nil {
		b.Fatal(err)
	}
	want := len(envs) * (cfg.Rollout.GroupSize + cfg.Rollout.HintedGroupSize) * 4
	b.ResetTimer()
	var wall time.Duration
	var calls []int
	var peakRSS, peakSandbox, memDrop int64
	workers, peakPlays := 0, 0
	for i := range b.N {
		step := int64(i) * refresh
		b.StopTimer()
		writePool("bench", step, envs)
		b.StartTimer()
		stop := make(chan struct{})
		memBefore := memAvailable()
		var wg sync.WaitGroup
		wg.Go(func() {
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			start := time.Now()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				n := client.Load().Calls
				calls = append(calls, n)
				self, children := processRSS()
				peakRSS, peakSandbox = max(peakRSS, self+children), max(peakSandbox, children)
				memDrop = max(memDrop, memBefore-memAvailable())
				if len(calls)%4 == 0 {
					b.Logf("t=%4.1fs calls in flight %d, sandbox RSS %d MiB", time.Since(start).Seconds(), n, children>>20)
				}
			}
		})
		t1 := time.Now()
		res, err := stage.Within(ctx, env, stage.Rollout, step, rollout.Run)
		wall += time.Since(t1)
		close(stop)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		if res.Turns != want {
			b.Fatalf("played %d turns, want %d (ended by %v)", res.Turns, want, res.EndedBy)
		}
		workers, peakPlays = res.Workers, max(peakPlays, res.PeakPlays)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(wall.Seconds()/n, "s/step")
	b.ReportMetric(critical.Seconds(), "critical_path_s")
	b.ReportMetric(wall.Seconds()/n/critical.Seconds(), "wall/critical")
	b.ReportMetric(float64(workers), "workers")
	b.ReportMetric(float64(peakPlays), "plays_in_flight_max")
	p50, top := quantiles(calls)
	b.ReportMetric(float64(p50), "calls_in_flight_p50")
	b.ReportMetric(float64(top), "calls_in_flight_max")
	b.ReportMetric(float64(peakRSS)/(1<<20), "peak_rss_MiB")
	b.ReportMetric(float64(peakSandbox)/(1<<20), "sandbox_rss_MiB")
	if workers > 0 {
		b.ReportMetric(float64(peakSandbox)/float64(workers)/(1<<20), "MiB/worker")
	}
	b.ReportMetric(float64(memDrop)/(1<<20), "mem_available_drop_MiB")
}

// memAvailable returns the machine's MemAvailable (/proc/meminfo), bytes; 0 when unreadable.
func memAvailable() int64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// quantiles returns the median and the largest of xs.
func quantiles(xs []int) (p50, top int) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2], s[len(s)-1]
}

// processRSS returns the resident memory of this process and the sum over its descendants (the
// sandbox workers and their env instances; shared pages count once per process, so the sum is an upper
// bound), bytes, from /proc/PID/statm and /proc/PID/stat.
func processRSS() (self, children int64) {
	page := int64(os.Getpagesize())
	parent := map[int]int{}
	rss := map[int]int64{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		rest := string(stat)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
		statm, err := os.ReadFile(d + "/statm")
		if err != nil {
			continue
		}
		if g := strings.Fields(string(statm)); len(g) > 1 {
			pages, _ := strconv.ParseInt(g[1], 10, 64)
			rss[pid] = pages * page
		}
	}
	me := os.Getpid()
	for pid, r := range rss {
		if pid == me {
			self = r
			continue
		}
		for p, hops := parent[pid], 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			if p == me {
				children += r
				break
			}
		}
	}
	return self, children
}
