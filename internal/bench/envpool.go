package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// EnvPoolMeta is an env_pool item's bench_items.meta: what the program's source said about it.
type EnvPoolMeta struct {
	// Setting is games or tools: the Agent prompt, action parsing and tools() of the episode.
	Setting schemas.Setting `json:"setting"`
	// ClassName is the environment class; Skill its skill (may be empty); CodeSHA256 the program's hash.
	ClassName  string `json:"class_name,omitempty"`
	Skill      string `json:"skill,omitempty"`
	CodeSHA256 string `json:"code_sha256,omitempty"`
}

// ParseEnvPoolMeta reads an env_pool item's meta.
func ParseEnvPoolMeta(meta string) (EnvPoolMeta, error) {
	var m EnvPoolMeta
	if err := json.Unmarshal([]byte(meta), &m); err != nil {
		return m, fmt.Errorf("env_pool meta: %w", err)
	}
	return m, nil
}

// ImportEnvPool reads env programs already in the lake as the env_pool benchmark `name`, deduplicating
// by id: the imported pools named by pools (`spade pool import`'s pools table) and the envs of runs at
// steps, each source "RUN@STEP" (the envs partition the gate or pool stage committed at that step).
// The column mapping (hints are never read: env_pool items are played without them):
//
//	pools:  id → item_id;      code → question;  setting, class_name, skill, code_sha256 → meta;  source "pool:NAME"
//	envs:   env_id → item_id;  code → question;  setting, class_name, skill, code_sha256 → meta;  source "RUN@STEP"
//
// Nothing is committed unless every source reads.
func ImportEnvPool(ctx context.Context, lk *lake.Lake, name string, pools, runSteps []string) (ImportResult, error) {
	if err := lake.ValidName(name); err != nil {
		return ImportResult{}, &InputError{File: "--name", Problem: err.Error()}
	}
	if len(pools) == 0 && len(runSteps) == 0 {
		return ImportResult{}, &InputError{File: "--pool", Problem: "env_pool: name an imported pool (--pool NAME) or a run's envs (RUN@STEP)"}
	}
	var incoming []schemas.BenchItemRow
	seen := map[string]string{}
	add := func(id, code, source string, meta EnvPoolMeta) error {
		if prev, dup := seen[id]; dup {
			if prev == meta.CodeSHA256 {
				return nil
			}
			return &InputError{File: source, Problem: fmt.Sprintf("env %q is also in another source with other code", id)}
		}
		seen[id] = meta.CodeSHA256
		mb, _ := json.Marshal(meta)
		row := schemas.BenchItemRow{Bench: name, ItemID: id, Kind: schemas.BenchEnvPool, Question: code, Meta: string(mb), Source: source}
		if err := row.Validate(); err != nil {
			return &InputError{File: source, Problem: fmt.Sprintf("env %q: %v", id, err)}
		}
		incoming = append(incoming, row)
		return nil
	}
	for _, p := range pools {
		rows, err := lake.ReadRows[schemas.PoolRow](ctx, lk, lake.PoolKey(p))
		if errors.Is(err, lake.ErrNotCommitted) || (err == nil && len(rows) == 0) {
			return ImportResult{}, &InputError{File: "--pool", Problem: fmt.Sprintf("no pool %q in the lake (run `%s DIR|FILE...` first)", p, lk.Command("pool", "import", "--name", p))}
		}
		if err != nil {
			return ImportResult{}, err
		}
		for _, r := range rows {
			meta := EnvPoolMeta{Setting: r.Setting, ClassName: r.ClassName, Skill: r.Skill, CodeSHA256: r.CodeSHA256}
			if err := add(r.EntryID, r.Code, "pool:"+p, meta); err != nil {
				return ImportResult{}, err
			}
		}
	}
	for _, src := range runSteps {
		run, stepText, ok := strings.Cut(src, "@")
		step, err := strconv.ParseInt(stepText, 10, 64)
		if !ok || run == "" || err != nil || step < 0 {
			return ImportResult{}, &InputError{File: src, Problem: "want RUN@STEP (a run's envs at a pool step), e.g. myrun@0"}
		}
		rows, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.EnvsSpec.Name, Step: step})
		if errors.Is(err, lake.ErrNotCommitted) || (err == nil && len(rows) == 0) {
			return ImportResult{}, &InputError{File: src, Problem: fmt.Sprintf("run %s has no envs committed at step %d (a pool's refresh step: run `%s` first)", run, step, lk.Command("--run", run, "gate", "--step", strconv.FormatInt(step, 10)))}
		}
		if err != nil {
			return ImportResult{}, err
		}
		for _, r := range rows {
			meta := EnvPoolMeta{Setting: r.Setting, ClassName: r.ClassName, Skill: r.Skill, CodeSHA256: r.CodeSHA256}
			if err := add(r.EnvID, r.Code, src, meta); err != nil {
				return ImportResult{}, err
			}
		}
	}
	return merge(ctx, lk, name, schemas.BenchEnvPool, incoming)
}
