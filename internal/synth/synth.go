// Package synth writes a synthetic SPADE run through the real schemas and the real lake, so the analytics
// (sql/, `spade metrics`, the report, the notebooks) can be tested and benchmarked without a GPU or an LLM.
//
// The run follows the shape of the paper's 30B games run: a pool of sample.envs_per_step environments is
// generated every sample.refresh_every steps (candidates, gate results, accepted envs), every env is played
// rollout.group_size times without and with the hint at every step of its pool (episodes, turns, agent
// llm_calls), and the pool end scores the Designer (designer_rewards). The curriculum moves: the Agent's
// skill grows over the steps and the Designer's difficulty follows it more closely late than early, so the
// learnable-band share rises; formula disclosure falls and reward levels grow, as in the paper's §3.4 audit.
// Variants imitate the ablations: no_corpus collapses the topics (low Vendi, one class name repeated),
// no_memory loses track of the Agent (the band share falls towards zero).
//
// Nothing here is a model of SPADE's dynamics; it is data with known, moving properties.
package synth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/internal/progress"
	"github.com/spadekit/spade/schemas"
)

// Variant selects the ablation the synthetic run imitates.
type Variant string

// The variants, named like the paper's ablations.
const (
	Full     Variant = "full"
	NoCorpus Variant = "no_corpus"
	NoMemory Variant = "no_memory"
)

// Options sizes a synthetic run.
type Options struct {
	// Steps is the number of training steps (400 for the paper-sized run).
	Steps int
	// EnvsPerStep is the pool size (sample.envs_per_step).
	EnvsPerStep int
	// GroupSize is the number of episodes per env and hint condition (rollout.group_size).
	GroupSize int
	// MaxTurns bounds an episode (rollout.max_turns).
	MaxTurns int
	// RefreshEvery is the pool refresh period in steps (sample.refresh_every).
	RefreshEvery int
	// Window is metrics.window.
	Window int
	// Seed makes the run reproducible.
	Seed uint64
	// Variant is the ablation imitated.
	Variant Variant
	// Workers bounds the steps written in parallel (default 2).
	Workers int
	// Progress, when set, counts the steps written (a bar on a terminal, log lines otherwise).
	Progress *progress.Reporter
	// Train also writes train_metrics: an Agent update at every step and a Designer update at each pool's
	// last step, with a falling loss, a rising KL and a constant learning rate (off by default: tests
	// that write their own train_metrics start from none).
	Train bool
}

// Paper returns the paper-sized options: 400 steps × 24 envs × 32 episodes × up to 25 turns.
func Paper() Options {
	return Options{Steps: 400, EnvsPerStep: 24, GroupSize: 16, MaxTurns: 25, RefreshEvery: 4, Window: 16, Seed: 1, Variant: Full}
}

// Small returns options for fast tests: 32 steps × 6 envs × 8 episodes × up to 8 turns.
func Small() Options {
	return Options{Steps: 32, EnvsPerStep: 6, GroupSize: 4, MaxTurns: 8, RefreshEvery: 4, Window: 8, Seed: 1, Variant: Full}
}

// Config returns the run configuration the synthetic run is stored with.
func (o Options) Config() *config.Config {
	cfg, _ := config.Preset("qwen3-30b-a3b-games")
	cfg.Seed = int64(o.Seed)
	cfg.Sample.EnvsPerStep = o.EnvsPerStep
	cfg.Sample.RefreshEvery = o.RefreshEvery
	cfg.Sample.Corpus = ""
	cfg.Rollout.GroupSize = o.GroupSize
	cfg.Rollout.MaxTurns = o.MaxTurns
	cfg.Metrics.Window = o.Window
	cfg.Ablation.NoCorpus = o.Variant == NoCorpus
	cfg.Ablation.NoMemory = o.Variant == NoMemory
	// The generator plays both conditions at every step and scores the Designer with the unscaled regret
	// and the linear anchor over the pool's window, so the run's settings say so (ablate --rescore
	// recomputes the stored rewards from them).
	cfg.Rollout.HintedGroupSize, cfg.Rollout.HintedAt = o.GroupSize, config.HintedAtEveryStep
	cfg.Regret.Scale, cfg.Regret.Ramp, cfg.Regret.Delta, cfg.Regret.EMAUpdate = 0, 0, config.DeltaWindow, config.EMAPerStep
	cfg.Regret.EMAFast, cfg.Regret.EMASlow = 0.5, 0.1
	return cfg
}

func (o Options) validate() error {
	switch {
	case o.Steps < 1, o.EnvsPerStep < 1, o.GroupSize < 1, o.MaxTurns < 2, o.RefreshEvery < 1, o.Window < 1:
		return fmt.Errorf("synth: steps, envs, group size, refresh and window must be >= 1 and max turns >= 2: %+v", o)
	case o.Variant != Full && o.Variant != NoCorpus && o.Variant != NoMemory:
		return fmt.Errorf("synth: unknown variant %q (full, no_corpus or no_memory)", o.Variant)
	}
	return nil
}

// Write creates run in lk and writes every table of a synthetic run. The run must not exist.
func Write(ctx context.Context, lk *lake.Lake, run string, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	if err := lk.CreateRun(ctx, run, o.Config()); err != nil {
		return err
	}
	g := &generator{o: o}
	var pools []int
	for p := 0; p < o.Steps; p += o.RefreshEvery {
		pools = append(pools, p)
	}
	workers := max(o.Workers, 2)
	errs := make(chan error, len(pools))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	task := o.Progress.Start("synth", int64(o.Steps), "steps")
	defer task.Done()
	for _, p := range pools {
		wg.Add(1)
		sem <- struct{}{}
		go func(pool int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := g.writePool(ctx, lk, run, pool); err != nil {
				errs <- err
			}
			task.Add(int64(min(o.RefreshEvery, o.Steps-pool)))
		}(p)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

type generator struct{ o Options }

// rng returns the deterministic generator of one (pool or step, stream).
func (g *generator) rng(a, b uint64) *rand.Rand {
	return rand.New(rand.NewPCG(g.o.Seed*1_000_003+a, b))
}

// progress is the fraction of the run done at step, in [0, 1].
func (g *generator) progress(step int) float64 {
	return float64(step) / float64(max(g.o.Steps-1, 1))
}

// agentSkill is the Agent's latent ability at a step (logit scale): it grows over the run.
func (g *generator) agentSkill(step int) float64 { return -0.5 + 2.5*g.progress(step) }

var checks = []string{"static", "load", "instantiate", "reset", "smoke", "trivial", "hint_leak"}

var classStems = []string{"Maze", "Ledger", "Circuit", "Orbit", "Cipher", "Reactor", "Market", "Garden", "Relay",
	"Harbor", "Lattice", "Furnace", "Canal", "Beacon", "Vault", "Tide", "Loom", "Prism", "Quarry", "Signal"}

var classPrefixes = []string{"Rotating", "Hidden", "Thermal", "Sparse", "Layered", "Drifting", "Coupled", "Noisy",
	"Locked", "Folding", "Stacked", "Mirrored"}

// topicWords returns the vocabulary of topic t: 24 words shared by every env on that topic.
func topicWords(t int) []string {
	words := make([]string, 24)
	for i := range words {
		words[i] = fmt.Sprintf("t%dw%d", t, i)
	}
	return words
}

var commonWords = strings.Fields(`def class self return if else for in range while import state reward done
info observation action step reset seed random int float str list dict append len min max sum true false none`)

type env struct {
	row          schemas.EnvRow
	difficulty   float64
	levels       int
	disclosed    bool
	verifiable   bool
	flaky        bool
	hintBoost    float64
	accepted     bool
	slotAttempts int
}

func (g *generator) writePool(ctx context.Context, lk *lake.Lake, run string, pool int) error {
	o := g.o
	r := g.rng(uint64(pool), 1)
	p := g.progress(pool)
	var (
		samples    []schemas.SampleRow
		candidates []schemas.CandidateRow
		gates      []schemas.GateResultRow
		envRows    []schemas.EnvRow
		envs       []*env
		calls      []schemas.LLMCallRow
	)
	window := pool / o.RefreshEvery
	for slot := 0; slot < o.EnvsPerStep; slot++ {
		skill := schemas.Skills[(window*3+slot%3)%len(schemas.Skills)]
		topic := r.IntN(400)
		className := classPrefixes[r.IntN(len(classPrefixes))] + classStems[r.IntN(len(classStems))] + "Env"
		if o.Variant == NoCorpus {
			topic = r.IntN(3)
			if r.Float64() < 0.8 {
				className = "RotatingMazeEnv"
			}
		}
		docID := fmt.Sprintf("doc-%06d", pool*o.EnvsPerStep+slot)
		if o.Variant == NoCorpus {
			docID = ""
		}
		samples = append(samples, schemas.SampleRow{Step: int64(pool), Slot: int32(slot), Skill: skill,
			Setting: schemas.SettingGames, DocID: docID, Excerpt: "excerpt of " + docID})
		// Attempts: each fails the gate with probability 0.25; at most gate.max_attempts (5).
		accepted := 0
		for attempt := 1; attempt <= 5; attempt++ {
			envID := fmt.Sprintf("p%04d-s%02d-a%d", pool, slot, attempt)
			failAt := -1
			if r.Float64() < 0.25 {
				failAt = r.IntN(len(checks))
			}
			code := g.code(r, className, skill, topic)
			callID := "d-" + envID
			candidates = append(candidates, schemas.CandidateRow{Step: int64(pool), Slot: int32(slot), EnvID: envID,
				Attempt: int32(attempt), Skill: skill, Setting: schemas.SettingGames, DocID: docID, Code: code,
				Hint: "hint for " + className, RawResponse: "```python\n" + code + "\n```<hint>...</hint>", CallID: callID})
			calls = append(calls, schemas.LLMCallRow{Step: int64(pool), CallID: callID, Role: schemas.RoleDesigner,
				Request: `{"role":"designer"}`, ResponseText: "designed", FinishReason: "stop",
				PromptTokens: 3000 + int64(r.IntN(2000)), CompletionTokens: 2000 + int64(r.IntN(6000)),
				LatencyMS: 20000 + 20000*r.Float64(), Model: "synthetic", WeightsVersion: fmt.Sprintf("v%d", pool)})
			for i, check := range checks {
				row := schemas.GateResultRow{Step: int64(pool), Slot: int32(slot), EnvID: envID, Attempt: int32(attempt),
					Check: check, DurationMS: 5 + 50*r.Float64()}
				switch {
				case failAt < 0 || i < failAt:
					row.Passed = true
				case i == failAt:
					row.Error = check + " failed: synthetic"
				default:
					row.Skipped = true
					row.DurationMS = 0
				}
				gates = append(gates, row)
			}
			if failAt >= 0 {
				continue
			}
			accepted = attempt
			sum := sha256.Sum256([]byte(code))
			// The Designer aims at the Agent's skill; early and without memory its aim is loose.
			spread := 6.0 - 3.5*p
			if o.Variant == NoMemory {
				spread = 5.0 + 4.0*p
			}
			aim := g.agentSkill(pool) + spread*r.NormFloat64()
			if o.Variant == NoMemory {
				aim += 3 * p
			}
			e := &env{
				row: schemas.EnvRow{Step: int64(pool), PoolStep: int64(pool), Slot: int32(slot), EnvID: envID,
					Attempt: int32(attempt), Skill: skill, Setting: schemas.SettingGames, ClassName: className,
					Code: code, Hint: "hint for " + className, CodeSHA256: hex.EncodeToString(sum[:]), DocID: docID,
					CallID: callID, Contract: schemas.ContractGymnasium},
				difficulty: aim,
				levels:     2 + int(math.Round(1.7+2.1*p+r.NormFloat64()*0.8)),
				disclosed:  r.Float64() < 0.25-0.20*p,
				verifiable: r.Float64() < 0.90+0.03*p,
				flaky:      r.Float64() < 0.02+0.01*p,
				hintBoost:  0.2 + 0.8*r.Float64(),
			}
			if o.Variant == NoCorpus && className == "RotatingMazeEnv" {
				e.levels = 2
			}
			e.levels = max(e.levels, 2)
			envs = append(envs, e)
			envRows = append(envRows, e.row)
			break
		}
		_ = accepted
	}
	if err := put(ctx, lk, run, "samples", pool, samples); err != nil {
		return err
	}
	if err := put(ctx, lk, run, "candidates", pool, candidates); err != nil {
		return err
	}
	if err := put(ctx, lk, run, "gate_results", pool, gates); err != nil {
		return err
	}
	if err := put(ctx, lk, run, "envs", pool, envRows); err != nil {
		return err
	}
	type tally struct {
		nNo, nHint, solvedNo int
		sumNo, sumHint       float64
	}
	tallies := make([]tally, len(envs))
	for step := pool; step < min(pool+o.RefreshEvery, o.Steps); step++ {
		episodes, turns, stepCalls := g.playStep(step, envs)
		if step == pool {
			stepCalls = append(stepCalls, calls...)
		}
		for _, ep := range episodes {
			i := ep.idx
			if ep.row.EndedBy == schemas.EndedEnvError {
				continue
			}
			if ep.row.Hinted {
				tallies[i].nHint++
				tallies[i].sumHint += ep.row.Return
			} else {
				tallies[i].nNo++
				tallies[i].sumNo += ep.row.Return
				if ep.row.Success {
					tallies[i].solvedNo++
				}
			}
		}
		rows := make([]schemas.EpisodeRow, len(episodes))
		for i, ep := range episodes {
			rows[i] = ep.row
		}
		if err := put(ctx, lk, run, "episodes", step, rows); err != nil {
			return err
		}
		if err := put(ctx, lk, run, "turns", step, turns); err != nil {
			return err
		}
		if err := put(ctx, lk, run, "llm_calls", step, stepCalls); err != nil {
			return err
		}
		if o.Train {
			if err := put(ctx, lk, run, "train_metrics", step, g.trainStep(step, pool, rows)); err != nil {
				return err
			}
		}
	}
	last := min(pool+o.RefreshEvery, o.Steps) - 1
	var rewards []schemas.DesignerRewardRow
	for i, e := range envs {
		t := tallies[i]
		row := schemas.DesignerRewardRow{Step: int64(last), PoolStep: int64(pool), EnvID: e.row.EnvID, Skill: e.row.Skill,
			Variant: schemas.VariantRegretAnchor, Final: true, NNoHint: int32(t.nNo), NHint: int32(t.nHint)}
		if t.nNo == 0 {
			row.Excluded = "no usable no-hint episode"
			rewards = append(rewards, row)
			continue
		}
		row.SolveRate = float64(t.solvedNo) / float64(t.nNo)
		row.RNoHint = t.sumNo / float64(t.nNo)
		row.RHint = row.RNoHint
		if t.nHint > 0 {
			row.RHint = t.sumHint / float64(t.nHint)
		}
		row.Regret = row.RHint - row.RNoHint
		row.Anchor = outcome.DifficultyAnchor(row.SolveRate, 0.4, 0.6)
		row.Reward = 0.4*math.Max(0, row.Regret) + 0.6*row.Anchor
		rewards = append(rewards, row)
	}
	return put(ctx, lk, run, "designer_rewards", last, rewards)
}

type episode struct {
	idx int
	row schemas.EpisodeRow
}

// playStep plays every env of the pool at one step: group_size episodes without and with the hint.
func (g *generator) playStep(step int, envs []*env) ([]episode, []schemas.TurnRow, []schemas.LLMCallRow) {
	o := g.o
	r := g.rng(uint64(step), 2)
	skill := g.agentSkill(step)
	var (
		episodes []episode
		turns    []schemas.TurnRow
		calls    []schemas.LLMCallRow
	)
	for i, e := range envs {
		for _, hinted := range []bool{false, true} {
			logit := skill - e.difficulty
			if hinted {
				logit += 1.5 * e.hintBoost
			}
			solveProb := 1 / (1 + math.Exp(-logit))
			for k := 0; k < o.GroupSize; k++ {
				h := 0
				if hinted {
					h = 1
				}
				epID := fmt.Sprintf("%s-t%04d-h%d-%02d", e.row.EnvID, step, h, k)
				ep := schemas.EpisodeRow{Step: int64(step), PoolStep: e.row.PoolStep, EnvID: e.row.EnvID, Skill: e.row.Skill,
					EpisodeID: epID, Hinted: hinted, Index: int32(k), Seed: int64(step*1000 + k)}
				success := r.Float64() < solveProb
				n := 2 + r.IntN(o.MaxTurns*3/4)
				ep.EndedBy = schemas.EndedDone
				switch {
				case e.flaky && r.Float64() < 0.3:
					ep.EndedBy, ep.Error, success = schemas.EndedEnvError, "Traceback: synthetic", false
					n = 1 + r.IntN(3)
				case !success && r.Float64() < 0.5:
					ep.EndedBy, n = schemas.EndedMaxTurns, o.MaxTurns
					if k%3 == 2 { // the env's own time limit (as long as rollout.max_turns here) truncated it
						ep.EndedBy = schemas.EndedEnvTruncated
					}
				}
				n = min(n, o.MaxTurns)
				var ret float64
				for t := 0; t < n; t++ {
					callID := fmt.Sprintf("a-%s-%02d", epID, t)
					tr := schemas.TurnRow{Step: int64(step), EpisodeID: epID, EnvID: e.row.EnvID, Turn: int32(t),
						Action: "move", CallID: callID}
					if t == 0 {
						tr.Observation = g.opening(e)
					} else {
						tr.Observation = "state " + fmt.Sprint(t)
					}
					last := t == n-1
					switch {
					case last && ep.EndedBy == schemas.EndedDone:
						tr.Done = true
						if success {
							tr.Reward = 1
						} else {
							tr.Reward = 0
						}
						if e.verifiable {
							tr.Info = fmt.Sprintf(`{"success": %t}`, success)
						} else {
							tr.Info = `{}`
						}
					case e.levels > 2 && r.Float64() < 0.3:
						level := 1 + r.IntN(e.levels-2)
						tr.Reward = float64(level) / float64(e.levels-1) / 4
						tr.Info = `{}`
					default:
						tr.Info = `{}`
					}
					if last && ep.EndedBy == schemas.EndedEnvTruncated {
						tr.Done, tr.Truncated = true, true
					}
					ret += tr.Reward
					turns = append(turns, tr)
					call := schemas.LLMCallRow{Step: int64(step), CallID: callID, Role: schemas.RoleAgent,
						Request: "{}", ResponseText: "<action>move</action>", FinishReason: "stop",
						PromptTokens: int64(800 + 300*t), CompletionTokens: int64(50 + r.IntN(400)),
						LatencyMS: 300 + 900*r.Float64(), Model: "synthetic", WeightsVersion: fmt.Sprintf("v%d", step)}
					calls = append(calls, call)
					ep.Tokens += call.PromptTokens + call.CompletionTokens
				}
				ep.Turns = int32(n)
				ep.Success = success
				ep.Return = ret
				ep.EnvCPUSeconds = 0.002 * float64(n) * (1 + r.Float64())
				episodes = append(episodes, episode{idx: i, row: ep})
			}
		}
	}
	return episodes, turns, calls
}

// opening is the env's first observation; disclosing envs state their governing formula.
func (g *generator) opening(e *env) string {
	if e.disclosed {
		return "Goal: reach the target. The governing formula is m = m0 / sqrt(1 - v^2/c^2), where m0 is the rest mass."
	}
	return "Goal: reach the target using the instruments in front of you."
}

// code writes a synthetic program of about 300 words: common Python words, the class name, and words of
// the env's topic and skill, so lexical embedders see topics.
func (g *generator) code(r *rand.Rand, className, skill string, topic int) string {
	words := topicWords(topic)
	var b strings.Builder
	fmt.Fprintf(&b, "class %s:\n    # skill %s\n", className, skill)
	for i := 0; i < 300; i++ {
		if i%12 == 0 {
			b.WriteString("\n    ")
		}
		switch x := r.Float64(); {
		case x < 0.5:
			b.WriteString(words[r.IntN(len(words))])
		case x < 0.55:
			b.WriteString(fmt.Sprintf("w%d", r.IntN(5000)))
		default:
			b.WriteString(commonWords[r.IntN(len(commonWords))])
		}
		b.WriteByte(' ')
	}
	return b.String()
}

// trainStep is the train_metrics of a step: the Agent's update over the step's episodes and, at a pool's
// last step, the Designer's over the pool's envs.
func (g *generator) trainStep(step, pool int, episodes []schemas.EpisodeRow) []schemas.TrainMetricsRow {
	r := g.rng(uint64(step), 0x7a11)
	p := g.progress(step)
	var tokens int64
	for _, e := range episodes {
		tokens += e.Tokens
	}
	peak := int64((28 + 6*p + g.rng(uint64(step), 0x9eae).Float64()) * (1 << 30)) // one update, both roles
	row := func(role schemas.Role, scale float64, tokens, samples int64) schemas.TrainMetricsRow {
		clip := 0.02 + 0.08*p*r.Float64()
		seconds := 20*scale + 5*r.Float64()
		return schemas.TrainMetricsRow{Step: int64(step), Role: role,
			Loss: scale * (0.08*math.Exp(-2*p) + 0.02*(r.Float64()-0.5)), KL: scale * 0.004 * p * (1 + 0.3*r.Float64()),
			ClipFrac: clip, ClipFracLow: clip * 0.4, ClipFracHigh: clip * 0.6, RatioMean: 1 + 0.01*(r.Float64()-0.5), RatioMax: 1.2 + r.Float64(),
			ISWeightMean: 1, GradNorm: scale * (0.5 + 0.3*r.Float64()), LR: 1e-6, Tokens: tokens, Samples: samples,
			WeightsVersion: fmt.Sprintf("%s-step%d", role, step), Seconds: seconds, PeakMemoryBytes: peak}
	}
	out := []schemas.TrainMetricsRow{row(schemas.RoleAgent, 1, tokens, int64(len(episodes)))}
	if step == min(pool+g.o.RefreshEvery, g.o.Steps)-1 {
		out = append(out, row(schemas.RoleDesigner, 0.3, int64(g.o.EnvsPerStep)*400, int64(g.o.EnvsPerStep)))
	}
	return out
}

// put commits one partition of rows in a transaction of its own (record stage synth-<table>); an empty
// slice commits an empty partition.
func put[T schemas.Row](ctx context.Context, lk *lake.Lake, run, table string, step int, rows []T) error {
	spec := lake.TxnSpec{Run: run, Stage: "synth-" + strings.ReplaceAll(table, "_", "-"), Step: int64(step)}
	_, err := lake.CommitRows(ctx, lk, spec, lake.PartitionKey{Run: run, Table: table, Step: int64(step)}, rows,
		lake.WriteOptions{SkipValidation: true})
	if err != nil {
		return fmt.Errorf("synth: %s step %d: %w", table, step, err)
	}
	return nil
}
