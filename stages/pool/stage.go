package pool

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// Name is the pool stage's name (`spade run --only pool`).
const Name stage.Name = "pool"

// Stage is the pool stage as the stage contract runs it (stage.Execute).
type Stage struct{}

// Name is "pool".
func (Stage) Name() stage.Name { return Name }

// Reads lists nothing: the pool is imported, not written by a stage (a missing one gets its own message).
func (Stage) Reads() []stage.Input { return nil }

// Writes is rlve_levels (an RLVE pool's only) and envs, the marker.
func (Stage) Writes() []string { return []string{schemas.RLVELevelsSpec.Name, schemas.EnvsSpec.Name} }

// Due is true at pool refresh steps of a run with sample.pool set (stage.PoolDue).
func (Stage) Due(cfg *config.Config, step int64) bool { return stage.PoolDue(cfg, step) }

// Run writes the step's envs from the pool and returns the closing line.
func (Stage) Run(ctx context.Context, env *stage.Env, step int64) (string, error) {
	cfg := env.Config
	rows, err := Read(ctx, env.Lake, cfg.Sample.Pool)
	if err != nil {
		return "", fmt.Errorf("pool: %w", err)
	}
	if isRLVE(rows) {
		envs, levels, err := rlveStep(ctx, env, step, rows)
		if err != nil {
			return "", err
		}
		key := lake.PartitionKey{Run: env.Run, Table: schemas.RLVELevelsSpec.Name, Step: step}
		if _, err := lake.WriteRows(ctx, env.Txn, key, levels, lake.WriteOptions{}); err != nil {
			return "", fmt.Errorf("pool: %w", err)
		}
		if err := writeEnvs(ctx, env, step, envs); err != nil {
			return "", err
		}
		promoted, top := 0, 0
		for _, l := range levels {
			if l.Promoted {
				promoted++
			}
			top = max(top, int(l.High))
		}
		return fmt.Sprintf("%d envs from RLVE pool %s (%d environments; %d moved up a level, highest level %d)",
			len(envs), cfg.Sample.Pool, len(rows), promoted, top), nil
	}
	envs, err := Envs(cfg, step, rows)
	if err != nil {
		return "", err
	}
	if err := writeEnvs(ctx, env, step, envs); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d envs from pool %s (%d programs)", len(envs), cfg.Sample.Pool, len(rows)), nil
}

// writeEnvs commits the step's envs.
func writeEnvs(ctx context.Context, env *stage.Env, step int64, envs []schemas.EnvRow) error {
	key := lake.PartitionKey{Run: env.Run, Table: schemas.EnvsSpec.Name, Step: step}
	if _, err := lake.WriteRows(ctx, env.Txn, key, envs, lake.WriteOptions{}); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	return nil
}

// isRLVE reports whether a pool is an RLVE pool (Import keeps a pool's programs of one kind).
func isRLVE(rows []schemas.PoolRow) bool {
	return len(rows) > 0 && rows[0].Format == schemas.PoolRLVE
}

// Envs returns the envs of refresh step `step` drawn from the pool: the programs in a seeded order fixed
// for the run (lowest sha256(seed, id) first), pool k taking the next min(sample.envs_per_step, pool size)
// of them, wrapping, so the run rotates through the whole pool and no program repeats within a pool. A
// program imported without a skill is labelled with sample.skills in turn by slot. Env ids are a function
// of the run seed, the step and the program id.
func Envs(cfg *config.Config, step int64, rows []schemas.PoolRow) ([]schemas.EnvRow, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("pool: pool %q is empty", cfg.Sample.Pool)
	}
	for _, r := range rows {
		if r.Setting != cfg.Setting {
			return nil, fmt.Errorf("pool: pool %q holds %s programs but the run's setting is %s", cfg.Sample.Pool, r.Setting, cfg.Setting)
		}
	}
	skills, err := cfg.SkillList()
	if err != nil {
		return nil, fmt.Errorf("pool: %w", err)
	}
	order := append([]schemas.PoolRow(nil), rows...)
	sort.Slice(order, func(i, j int) bool {
		return orderKey(cfg.Seed, order[i].EntryID) < orderKey(cfg.Seed, order[j].EntryID)
	})
	n := min(cfg.Sample.EnvsPerStep, len(order))
	start := int(cfg.PoolIndex(step)*int64(n)) % len(order)
	out := make([]schemas.EnvRow, n)
	for slot := range out {
		p := order[(start+slot)%len(order)]
		skill := p.Skill
		if skill == "" {
			skill = skills[slot%len(skills)]
		}
		id := sha256.Sum256(fmt.Appendf(nil, "pool\x00%d\x00%d\x00%s", cfg.Seed, step, p.EntryID))
		out[slot] = schemas.EnvRow{Step: step, PoolStep: step, Slot: int32(slot), EnvID: "env-" + hex.EncodeToString(id[:8]),
			Attempt: 1, Skill: skill, Setting: p.Setting, ClassName: p.ClassName, Code: p.Code, Hint: p.Hint,
			CodeSHA256: p.CodeSHA256, MemoryRefs: []string{}, Contract: p.Contract}
	}
	return out, nil
}

// orderKey orders a pool's programs for a run: the first 8 bytes of sha256(seed, id).
func orderKey(seed int64, id string) uint64 {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s", seed, id))
	return binary.BigEndian.Uint64(sum[:8])
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
