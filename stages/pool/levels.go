package pool

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// Window is one RLVE environment's sliding window of difficulty levels: problems are drawn from
// [Low, High], and Attempts and Successes count the plays at level High since the last check.
type Window struct {
	Low, High           int
	Attempts, Successes int64
}

// Rule is RLVE's sliding-window difficulty rule (the authors' SlidingWindowController, the scripts'
// default variant), with its settings: TauAcc (sample.rlve_tau_acc), TauNum (sample.rlve_tau_num), Width
// (sample.rlve_window) and MaxLevel (sample.rlve_max_level).
type Rule struct {
	TauAcc   float64
	TauNum   int64
	Width    int
	MaxLevel int
}

// RuleOf returns the run's rule.
func RuleOf(cfg *config.Config) Rule {
	return Rule{TauAcc: cfg.Sample.RLVETauAcc, TauNum: int64(cfg.Sample.RLVETauNum), Width: cfg.Sample.RLVEWindow, MaxLevel: cfg.Sample.RLVEMaxLevel}
}

// Observe folds one play at level into w and reports whether w moved up. Only a play at level w.High
// counts: Attempts += 1, Successes += 1 when it succeeded. Once Attempts ≥ TauNum the window is checked:
// when Successes / Attempts ≥ TauAcc and High < MaxLevel, High += 1 and Low = max(Low, High − Width + 1);
// either way both counts go back to 0. A play below High (the window moved since it was drawn) changes
// nothing.
func (r Rule) Observe(w *Window, level int, success bool) bool {
	if level != w.High {
		return false
	}
	w.Attempts++
	if success {
		w.Successes++
	}
	if w.Attempts < r.TauNum {
		return false
	}
	promoted := float64(w.Successes)/float64(w.Attempts) >= r.TauAcc && w.High < r.MaxLevel
	if promoted {
		w.High++
		w.Low = max(w.Low, w.High-r.Width+1)
	}
	w.Attempts, w.Successes = 0, 0
	return promoted
}

// playCounts reports whether an episode is one of the plays the rule folds in: an unhinted play that did
// not fail for reasons of the env or the machinery (the authors' collector drops failed plays before the
// controller sees them). success is a return above 0 (the wrapper rewards 1 for a correct answer).
func playCounts(e schemas.EpisodeRow) (counts, success bool) {
	switch e.EndedBy {
	case schemas.EndedEnvError, schemas.EndedTimeout, schemas.EndedAgentError:
		return false, false
	}
	return !e.Hinted, e.Return > 0
}

// rlveStep writes an RLVE pool's envs of pool step `step` and the difficulty state they were drawn from.
// The state is the one committed at the run's previous pool step with every counted play of that pool's
// steps folded in (Rule.Observe, in step, env and index order), or a fresh [0, 0] window at the first;
// each drawn env's level is drawn uniformly from its window and its problem seed with it, both functions
// of the run seed, the step and the environment, and set in the program (RLVEProgram) so every play of the
// step shares one problem. The plays of the previous pool must be committed (`spade rollout`).
func rlveStep(ctx context.Context, env *stage.Env, step int64, rows []schemas.PoolRow) ([]schemas.EnvRow, []schemas.RLVELevelRow, error) {
	cfg := env.Config
	rule := RuleOf(cfg)
	windows := map[string]*Window{}
	for _, r := range rows {
		windows[r.Name] = &Window{}
	}
	promotedNow := map[string]bool{}
	prevStep, prev, err := previousLevels(ctx, env, step)
	if err != nil {
		return nil, nil, err
	}
	if prev != nil {
		drawnAs := map[string]schemas.RLVELevelRow{}
		for _, r := range prev {
			if w, ok := windows[r.Name]; ok {
				*w = Window{Low: int(r.Low), High: int(r.High), Attempts: r.Attempts, Successes: r.Successes}
			}
			if r.Drawn {
				drawnAs[r.EnvID] = r
			}
		}
		plays, err := poolPlays(ctx, env, prevStep, step)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range plays {
			drawn, ok := drawnAs[e.EnvID]
			counts, success := playCounts(e)
			if !ok || !counts {
				continue
			}
			if w, ok := windows[drawn.Name]; ok && rule.Observe(w, int(drawn.Level), success) {
				promotedNow[drawn.Name] = true
			}
		}
	}
	envs, err := Envs(cfg, step, rows)
	if err != nil {
		return nil, nil, err
	}
	byCode := map[string]schemas.PoolRow{}
	for _, r := range rows {
		byCode[r.CodeSHA256] = r
	}
	drawnEnvs := map[string]schemas.EnvRow{}
	levelOf := map[string]int{}
	seedOf := map[string]int64{}
	for i, e := range envs {
		p := byCode[e.CodeSHA256]
		w := windows[p.Name]
		level := w.Low + int(drawUint(cfg.Seed, step, p.Name, "level")%uint64(w.High-w.Low+1))
		seed := int64(drawUint(cfg.Seed, step, p.Name, "problem") >> 33) // 31 bits, what RLVE's generators take
		code, err := RLVEProgram(p.Code, level, seed)
		if err != nil {
			return nil, nil, fmt.Errorf("pool: pool %q, program %s: %w", cfg.Sample.Pool, p.EntryID, err)
		}
		envs[i].Code, envs[i].CodeSHA256 = code, sha256Hex(code)
		drawnEnvs[p.Name], levelOf[p.Name], seedOf[p.Name] = envs[i], level, seed
	}
	levels := make([]schemas.RLVELevelRow, 0, len(rows))
	for _, r := range rows {
		w := windows[r.Name]
		row := schemas.RLVELevelRow{Step: step, Name: r.Name, EntryID: r.EntryID, Low: int32(w.Low), High: int32(w.High), Level: int32(w.High),
			Attempts: w.Attempts, Successes: w.Successes, Promoted: promotedNow[r.Name]}
		if e, ok := drawnEnvs[r.Name]; ok {
			row.Drawn, row.EnvID, row.Level, row.ProblemSeed = true, e.EnvID, int32(levelOf[r.Name]), seedOf[r.Name]
		}
		levels = append(levels, row)
	}
	return envs, levels, nil
}

// previousLevels returns the rlve_levels rows of the run's last pool step before step (and that step),
// or nil when there is none.
func previousLevels(ctx context.Context, env *stage.Env, step int64) (int64, []schemas.RLVELevelRow, error) {
	steps, err := env.Lake.Steps(ctx, env.Run, schemas.RLVELevelsSpec.Name)
	if err != nil {
		return 0, nil, fmt.Errorf("pool: %w", err)
	}
	prevStep := int64(-1)
	for _, s := range steps {
		if s < step && s > prevStep {
			prevStep = s
		}
	}
	if prevStep < 0 {
		return 0, nil, nil
	}
	rows, err := lake.ReadRows[schemas.RLVELevelRow](ctx, env.Lake, lake.PartitionKey{Run: env.Run, Table: schemas.RLVELevelsSpec.Name, Step: prevStep})
	if err != nil {
		return 0, nil, fmt.Errorf("pool: rlve_levels of step %d: %w", prevStep, err)
	}
	return prevStep, rows, nil
}

// poolPlays returns the episodes of the pool that started at poolStep, steps poolStep .. step−1, in step,
// env and index order; every one of those steps' episodes must be committed.
func poolPlays(ctx context.Context, env *stage.Env, poolStep, step int64) ([]schemas.EpisodeRow, error) {
	var out []schemas.EpisodeRow
	for s := poolStep; s < step; s++ {
		episodes, err := lake.ReadStep[schemas.EpisodeRow](ctx, env.Lake, env.Run, schemas.EpisodesSpec.Name, s)
		if errors.Is(err, lake.ErrNotCommitted) {
			return nil, fmt.Errorf("pool: %w: the RLVE levels of step %d fold in the plays of step %d, whose episodes are not committed (run `%s` first)",
				stage.ErrMissingInput, step, s, stage.Command(env.Lake, env.Run, "rollout", "--step", strconv.FormatInt(s, 10)))
		}
		if err != nil {
			return nil, fmt.Errorf("pool: episodes of step %d: %w", s, err)
		}
		for _, e := range episodes {
			if e.PoolStep == poolStep {
				out = append(out, e)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b schemas.EpisodeRow) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.EnvID, b.EnvID), cmp.Compare(a.Index, b.Index))
	})
	return out, nil
}

// drawUint is 64 bits of sha256(seed, step, name, what): the pool stage's draws for an RLVE environment.
func drawUint(seed, step int64, name, what string) uint64 {
	sum := sha256.Sum256(fmt.Appendf(nil, "rlve\x00%d\x00%d\x00%s\x00%s", seed, step, name, what))
	return binary.BigEndian.Uint64(sum[:8])
}
