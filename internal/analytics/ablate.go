package analytics

import (
	"context"
	"fmt"

	"github.com/spadekit/spade/internal/embed"
	"github.com/spadekit/spade/internal/lake"
)

// CompareOptions configures the side-by-side comparison of runs.
type CompareOptions struct {
	// Embedder selects the embeddings for the diversity columns.
	Embedder EmbedderSpec
	// Batch is the calibrated batch size: Vendi/n is the mean over Draws seeded batches of Batch envs
	// (DefaultBatch is the paper's Table 8 calibration: 24 envs, one rollout batch); ≤ 0 means one
	// subset size for every run, the smallest run's env count.
	Batch int
	// Draws is the number of batches per run (default 20).
	Draws int
	// Seed seeds the subsampling (same seed for every run).
	Seed uint64
	// Progress, when set, is told each phase as it starts: once the programs' embeddings, then each run.
	Progress func(what string)
}

// compareSQL summarises one run from its model views.
const compareSQL = `select
	(select count(*) from envs) as envs,
	(select avg(band_share) from learnable_band) as band_share_mean,
	(select band_share from learnable_band order by window_index desc limit 1) as band_share_last,
	(select sum(accepted) / nullif(sum(slots), 0)::double from acceptance) as acceptance,
	(select sum(well_defined * envs) / nullif(sum(envs), 0) from audits) as well_defined,
	(select sum(verifiable * envs) / nullif(sum(envs), 0) from audits) as verifiable,
	(select avg(regret) from regret_curve) as regret,
	(select avg(solve_rate_nohint) from solve_rates) as solve_rate_nohint,
	(select coalesce(max(streak), 1) from repeated_envs where key_kind = 'class_name') as longest_repeat`

// DefaultBatch is the batch size of the paper's Table 8 Vendi/n: per rollout batch of 24 envs, 24
// identical envs score Vendi 1 (Vendi/n = 1/24), a single-domain batch about 14.8–16.5, a batch drawn from
// a whole run about 21.3.
const DefaultBatch = 24

// Compare puts runs side by side (SPADE §3.5, Table 8 and Figure 6 for the ablations): calibrated Vendi/n
// and mean pairwise cosine distance, each the mean over o.Draws seeded batches of o.Batch envs of the run
// (a run with fewer envs is one batch of all of them), learnable-band share (mean over windows and last window),
// acceptance, well-defined and verifiable shares, mean regret and no-hint solve rate, and the longest
// streak of a repeated class name.
//
// With the built-in TF-IDF + LSA, the embedder is fitted once on the union of the runs' programs, so every
// run is measured in the same space; an OpenAI-compatible embedder's stored vectors are used as they are.
func Compare(ctx context.Context, lk *lake.Lake, runs []string, o CompareOptions) (*Table, error) {
	if o.Draws <= 0 {
		o.Draws = 20
	}
	e, err := o.Embedder.Embedder()
	if err != nil {
		return nil, err
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	progress("embedding the runs' programs")
	vectors, dims, err := runVectors(ctx, lk, runs, e)
	if err != nil {
		return nil, err
	}
	n := o.Batch
	if n <= 0 {
		for i, run := range runs {
			if len(vectors[run]) == 0 {
				return nil, fmt.Errorf("analytics: run %s has no envs to compare", run)
			}
			if i == 0 || len(vectors[run])/dims < n {
				n = len(vectors[run]) / dims
			}
		}
	}
	t := &Table{Columns: []string{"run", "envs", "batch", "vendi_per_n", "vendi_per_n_std", "mean_cosine_distance",
		"mean_cosine_distance_std", "band_share_mean", "band_share_last", "acceptance", "well_defined", "verifiable",
		"regret", "solve_rate_nohint", "longest_repeat"}}
	for _, run := range runs {
		progress("run " + run + ": calibrated Vendi/n and the models")
		x := vectors[run]
		cal, err := CalibratedVendi(x, len(x)/dims, dims, n, o.Draws, o.Seed)
		if err != nil {
			return nil, fmt.Errorf("analytics: run %s: %w", run, err)
		}
		s, err := Open(ctx, lk, run, e.Name())
		if err != nil {
			return nil, err
		}
		summary, err := Query(ctx, s.DB, compareSQL)
		s.Close()
		if err != nil {
			return nil, fmt.Errorf("analytics: run %s: %w", run, err)
		}
		row := []any{run, summary.Rows[0][0], int64(cal.N), cal.VendiPerN, cal.VendiPerNStd, cal.MeanDistance, cal.MeanDistanceStd}
		row = append(row, summary.Rows[0][1:]...)
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// runVectors returns each run's env embeddings (row-major, one row per accepted env) and their dimension.
func runVectors(ctx context.Context, lk *lake.Lake, runs []string, e embed.Embedder) (map[string][]float64, int, error) {
	out := map[string][]float64{}
	if _, builtin := e.(embed.TFIDFLSA); builtin {
		var docs []embed.Document
		owner := []string{}
		for _, run := range runs {
			s, err := OpenRuns(ctx, lk, run)
			if err != nil {
				return nil, 0, err
			}
			t, err := Query(ctx, s.DB, "select code_sha256, code from envs order by pool_step, slot, env_id")
			s.Close()
			if err != nil {
				return nil, 0, fmt.Errorf("analytics: run %s: %w", run, err)
			}
			for i := range t.Rows {
				docs = append(docs, embed.Document{ID: t.String(i, "code_sha256"), Text: t.String(i, "code")})
				owner = append(owner, run)
			}
		}
		db, err := OpenDB()
		if err != nil {
			return nil, 0, err
		}
		defer db.Close()
		vecs, err := e.Embed(ctx, db, docs)
		if err != nil {
			return nil, 0, err
		}
		dims := 0
		for i, v := range vecs {
			dims = len(v)
			out[owner[i]] = append(out[owner[i]], v...)
		}
		return out, dims, nil
	}
	dims := 0
	for _, run := range runs {
		if _, err := EnsureEmbeddings(ctx, lk, run, specOf(e)); err != nil {
			return nil, 0, err
		}
		s, err := OpenRuns(ctx, lk, run)
		if err != nil {
			return nil, 0, err
		}
		rows, err := s.DB.QueryContext(ctx, "select vector from embeddings where embedder = $1 order by step, env_id", e.Name())
		if err != nil {
			s.Close()
			return nil, 0, err
		}
		for rows.Next() {
			var vec []any
			if err := rows.Scan(&vec); err != nil {
				rows.Close()
				s.Close()
				return nil, 0, err
			}
			if dims != 0 && len(vec) != dims {
				rows.Close()
				s.Close()
				return nil, 0, fmt.Errorf("analytics: run %s: embeddings of %d and %d dimensions", run, dims, len(vec))
			}
			dims = len(vec)
			for _, f := range vec {
				x, _ := f.(float64)
				out[run] = append(out[run], x)
			}
		}
		rows.Close()
		s.Close()
	}
	return out, dims, nil
}

// specOf recovers the spec of an OpenAI embedder for EnsureEmbeddings.
func specOf(e embed.Embedder) EmbedderSpec {
	if o, ok := e.(embed.OpenAI); ok {
		return EmbedderSpec{Kind: "openai", BaseURL: o.Client.BaseURL, Model: o.Client.Model, APIKeyEnv: o.Client.APIKeyEnv}
	}
	return EmbedderSpec{}
}
