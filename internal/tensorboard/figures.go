package tensorboard

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spadekit/spade/internal/analytics"
)

// TrainColumns are the train_metrics columns written per role as train/<role>/<column>, plus
// tokens_per_second (tokens / seconds of the update).
var TrainColumns = []string{"loss", "kl", "clip_frac", "clip_frac_low", "clip_frac_high", "ratio_mean", "ratio_max",
	"is_weight_mean", "grad_norm", "lr", "tokens", "samples", "seconds",
	"left_out_broken_prefix", "left_out_missing_tokens", "left_out_missing_call", "peak_memory_bytes"}

// figureSQL are the queries of the figures, each giving (tag, step, value, settled) rows over the
// session's models and tables: every per-step figure of the report and every train_metrics column. The
// tags group as TensorBoard shows them: agent/ (the Agent's outcomes), curriculum/ (band share, regret,
// Vendi), designer/ (its reward), gate/, cost/, eval/<bench>/ and train/<role>/.
func figureSQL(window int) []string {
	win := fmt.Sprint(window)
	q := []string{
		`select 'agent/solve_rate_unhinted', step, solve_rate_nohint, step from solve_rates`,
		`select 'agent/solve_rate_hinted', step, solve_rate_hint, step from solve_rates`,
		`select 'agent/return_unhinted', step, return_nohint, step from solve_rates`,
		`select 'agent/return_hinted', step, return_hint, step from solve_rates`,
		`select 'curriculum/regret', step, regret, step from regret_curve`,
		`select 'curriculum/regret_smoothed', step, regret_smoothed, step from regret_curve`,
		`select 'curriculum/band_share', window_start, band_share, window_start + ` + win + ` - 1 from learnable_band`,
		`select 'curriculum/vendi_per_n', window_index * ` + win + `, vendi_per_n, (window_index + 1) * ` + win + ` - 1 from vendi_by_window`,
		`select 'curriculum/mean_cosine_distance', window_index * ` + win + `, mean_cosine_distance, (window_index + 1) * ` + win + ` - 1 from vendi_by_window`,
		`select 'designer/reward', pool_step, avg(reward), max(step) from designer_rewards
			where final and variant = getvariable('tb_variant') group by pool_step`,
		`select 'gate/acceptance', step, acceptance, step from acceptance`,
		`select 'gate/attempt_acceptance', step, attempt_acceptance, step from acceptance`,
		`select 'gate/attempts_per_slot', step, attempts_per_slot, step from acceptance`,
		`select 'cost/agent_tokens', step, agent_tokens, step from cost`,
		`select 'cost/designer_tokens', step, designer_tokens, step from cost`,
		`select 'cost/agent_latency_ms', step, agent_latency_ms, step from cost`,
		`select 'cost/env_cpu_seconds', step, env_cpu_seconds, step from cost`,
		`select 'eval/' || bench || '/avg_at_k', step, avg(avg_at_k), step from eval_scores group by bench, step`,
	}
	for _, c := range TrainColumns {
		q = append(q, `select 'train/' || role || '/`+c+`', step, `+c+`, step from train_metrics`)
	}
	q = append(q, `select 'train/' || role || '/tokens_per_second', step, tokens / nullif(seconds, 0), step from train_metrics`)
	return q
}

// Figures computes every figure of the session's run, sorted by step, then tag; a NULL value (a side
// with no counted episode, a window without embeddings) is left out.
func Figures(ctx context.Context, s *analytics.Session) ([]Scalar, error) {
	if _, err := s.DB.ExecContext(ctx, "set variable tb_variant = ?", string(s.Config.Regret.Variant)); err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	var out []Scalar
	for _, q := range figureSQL(s.Config.Metrics.Window) {
		rows, err := s.DB.QueryContext(ctx, "select * from ("+q+") f(tag, step, value, settled) where value is not null and isfinite(value::double)")
		if err != nil {
			return nil, fmt.Errorf("tensorboard: %s: %w", strings.Fields(q)[1], err)
		}
		for rows.Next() {
			var sc Scalar
			if err := rows.Scan(&sc.Tag, &sc.Step, &sc.Value, &sc.Settled); err != nil {
				rows.Close()
				return nil, fmt.Errorf("tensorboard: %w", err)
			}
			out = append(out, sc)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("tensorboard: %w", err)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Step != out[j].Step {
			return out[i].Step < out[j].Step
		}
		return out[i].Tag < out[j].Tag
	})
	return out, nil
}

// Live writes a run's figures as its steps commit: each call writes the figures that have settled by
// then and were not written before, so a window's figure is written once, when its last step is done.
type Live struct {
	w       *Writer
	written map[string]map[int64]bool
}

// NewLive starts a live writer with a new event file in dir.
func NewLive(dir string) (*Live, error) {
	w, err := Create(dir, "spade")
	if err != nil {
		return nil, err
	}
	return &Live{w: w, written: map[string]map[int64]bool{}}, nil
}

// Path is the event file's path.
func (l *Live) Path() string { return l.w.Path() }

// Step writes the session's figures settled by step (not yet written) and flushes them to the file.
func (l *Live) Step(ctx context.Context, s *analytics.Session, step int64) (int, error) {
	all, err := Figures(ctx, s)
	if err != nil {
		return 0, err
	}
	var fresh []Scalar
	for _, sc := range all {
		if sc.Settled > step || l.written[sc.Tag][sc.Step] {
			continue
		}
		if l.written[sc.Tag] == nil {
			l.written[sc.Tag] = map[int64]bool{}
		}
		l.written[sc.Tag][sc.Step] = true
		fresh = append(fresh, sc)
	}
	if err := l.w.Write(fresh, timeNow()); err != nil {
		return 0, err
	}
	return len(fresh), l.w.Flush()
}

// Close closes the event file.
func (l *Live) Close() error { return l.w.Close() }
