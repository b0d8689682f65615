package embed

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// RunResult says what EmbedRun did.
type RunResult struct {
	// Envs is the number of accepted envs of the run.
	Envs int
	// Written is true when the embeddings were (re)computed and committed; false when they were current.
	Written bool
}

// EmbedRun makes the run's `embeddings` rows of embedder current: when the env ids embedded under that name
// differ from the run's envs (or force is set), it embeds every env's code and commits one partition per
// pool step (replacing what was there, since a fitted embedder's space depends on the whole set). db is
// a session over the run (duck.OpenRuns) with the `envs` and `embeddings` views.
func EmbedRun(ctx context.Context, lk *lake.Lake, db *sql.DB, run string, embedder Embedder, force bool) (RunResult, error) {
	name := embedder.Name()
	var envs, embedded, matched int
	err := db.QueryRowContext(ctx, `select
			(select count(*) from envs),
			(select count(*) from embeddings where embedder = $1),
			(select count(*) from envs e join embeddings m
				on m.env_id = e.env_id and m.code_sha256 = e.code_sha256 and m.embedder = $1)`, name).
		Scan(&envs, &embedded, &matched)
	if err != nil {
		return RunResult{}, fmt.Errorf("embed: run %s: %w", run, err)
	}
	result := RunResult{Envs: envs}
	if !force && envs == embedded && envs == matched {
		return result, nil
	}
	rows, err := db.QueryContext(ctx, `select pool_step, env_id, code_sha256, code from envs order by pool_step, slot, env_id`)
	if err != nil {
		return result, fmt.Errorf("embed: run %s: envs: %w", run, err)
	}
	var (
		steps []int64
		ids   []string
		docs  []Document
	)
	for rows.Next() {
		var step int64
		var id, sha, code string
		if err := rows.Scan(&step, &id, &sha, &code); err != nil {
			rows.Close()
			return result, err
		}
		steps, ids = append(steps, step), append(ids, id)
		docs = append(docs, Document{ID: sha, Text: code})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return result, err
	}
	vectors, err := embedder.Embed(ctx, db, docs)
	if err != nil {
		return result, fmt.Errorf("embed: run %s with %s: %w", run, name, err)
	}
	byStep := map[int64][]schemas.EmbeddingRow{}
	for i, v := range vectors {
		byStep[steps[i]] = append(byStep[steps[i]], schemas.EmbeddingRow{Step: steps[i], EnvID: ids[i],
			CodeSHA256: docs[i].ID, Embedder: name, Dim: int32(len(v)), Vector: v})
	}
	// A partition holds one embedder's rows; several embedders of one run would overwrite each other, so
	// rows of other embedders already stored at that step are kept.
	existing, err := otherEmbedders(ctx, db, name)
	if err != nil {
		return result, err
	}
	for step, rows := range existing {
		if _, ok := byStep[step]; ok {
			byStep[step] = append(byStep[step], rows...)
		}
	}
	for step, rows := range byStep {
		key := lake.PartitionKey{Run: run, Table: schemas.EmbeddingsSpec.Name, Step: step}
		spec := lake.TxnSpec{Run: run, Stage: "embed", Step: step, Force: true}
		if _, err := lake.CommitRows(ctx, lk, spec, key, rows, lake.WriteOptions{}); err != nil {
			return result, fmt.Errorf("embed: run %s: %w", run, err)
		}
	}
	result.Written = true
	return result, nil
}

// otherEmbedders returns the stored embedding rows of embedders other than name, by step.
func otherEmbedders(ctx context.Context, db *sql.DB, name string) (map[int64][]schemas.EmbeddingRow, error) {
	rows, err := db.QueryContext(ctx, `select step, env_id, code_sha256, embedder, dim, vector from embeddings
		where embedder <> $1`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64][]schemas.EmbeddingRow{}
	for rows.Next() {
		var r schemas.EmbeddingRow
		var vec []any
		if err := rows.Scan(&r.Step, &r.EnvID, &r.CodeSHA256, &r.Embedder, &r.Dim, &vec); err != nil {
			return nil, err
		}
		for _, x := range vec {
			f, _ := x.(float64)
			r.Vector = append(r.Vector, f)
		}
		out[r.Step] = append(out[r.Step], r)
	}
	return out, rows.Err()
}
