package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spade-rl/spade/internal/config"
	"github.com/spade-rl/spade/internal/lake"
	"github.com/spade-rl/spade/schemas"
)

// SettingsFromConfig builds client settings from a run config. weightsVersion, when not empty, is the
// name under which the current trained weights are served (a LoRA adapter published by the trainer): the
// Agent always calls it, and so does the Designer (both roles share θ) unless ablation.frozen_designer
// pins the Designer to llm.designer.model; a frozen Designer is never trained, so its requests are Plain
// (portable to hosted APIs). The screen role falls back to the Agent's endpoint and model.
func SettingsFromConfig(cfg *config.Config, weightsVersion string) Settings {
	role := func(r config.Role, trained bool) RoleSettings {
		rs := RoleSettings{BaseURL: r.BaseURL, Model: r.Model, APIKeyEnv: r.APIKeyEnv, MaxTokens: r.MaxTokens,
			Temperature: r.Temperature, TopP: r.TopP, WeightsVersion: r.Model}
		if trained && weightsVersion != "" {
			rs.Model, rs.WeightsVersion = weightsVersion, weightsVersion
		}
		return rs
	}
	designer := role(cfg.LLM.Designer, !cfg.Ablation.FrozenDesigner)
	designer.Plain = cfg.Ablation.FrozenDesigner
	s := Settings{
		Roles: map[Role]RoleSettings{
			RoleDesigner: designer,
			RoleAgent:    role(cfg.LLM.Agent, true),
		},
		MaxInFlight: cfg.LLM.MaxInFlight,
		Timeout:     time.Duration(cfg.LLM.TimeoutSeconds) * time.Second,
		MaxRetries:  cfg.LLM.MaxRetries,
		Seed:        cfg.Seed,
	}
	if cfg.LLM.MaxRetries == 0 {
		s.MaxRetries = -1 // zero in the config means no retries
	}
	screen := cfg.LLM.Screen
	if screen.BaseURL == "" {
		screen.BaseURL = cfg.LLM.Agent.BaseURL
	}
	if screen.Model == "" {
		screen.Model = cfg.LLM.Agent.Model
	}
	s.Roles[RoleScreen] = role(screen, false)
	return s
}

// NewFromConfig returns a client for a run config, replaying from lk when a role's base URL is
// "replay:<run>", and checks the given roles before any work (see Check).
func NewFromConfig(ctx context.Context, cfg *config.Config, lk *lake.Lake, weightsVersion string, roles ...Role) (*Client, error) {
	s := SettingsFromConfig(cfg, weightsVersion)
	for _, r := range roles {
		if rs := s.Roles[r]; rs.BaseURL == "" {
			rs.BaseURL = os.Getenv("OPENAI_BASE_URL")
			s.Roles[r] = rs
		}
	}
	c, err := New(ctx, s, LakeReplayLoader(lk))
	if err != nil {
		return nil, err
	}
	if err := c.Check(ctx, roles...); err != nil {
		return nil, err
	}
	return c, nil
}

// LakeReplayLoader loads every llm_calls row of a run for replay: "replay:<run>" reads the run from lk,
// "replay:<run>@<lake URI>" from another lake (a directory such as testdata/sample-run, or s3://…).
func LakeReplayLoader(lk *lake.Lake) ReplayLoader {
	return func(ctx context.Context, run string) ([]Call, error) {
		if name, uri, ok := strings.Cut(run, "@"); ok {
			other, err := lake.Open(ctx, uri)
			if err != nil {
				return nil, err
			}
			lk, run = other, name
		}
		if _, err := lk.RunConfig(ctx, run); err != nil {
			return nil, err
		}
		rows, err := lake.ReadTable[schemas.LLMCallRow](ctx, lk, run, schemas.LLMCallsSpec.Name)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return nil, fmt.Errorf("run %q has no llm_calls to replay", run)
		}
		calls := make([]Call, len(rows))
		for i := range rows {
			if calls[i], err = CallFromRow(&rows[i]); err != nil {
				return nil, fmt.Errorf("llm_calls row %s: %w", rows[i].CallID, err)
			}
		}
		return calls, nil
	}
}

// CommitCalls adds calls to the run's llm_calls partition of a step. Several stages make calls at one
// step (generate, the gate's regenerations, rollout), and the lake commits a partition once, so this
// merges: it reads the committed rows, replaces those with the same call_id, sorts by call_id and
// atomically replaces the partition (retrying when another writer commits in between). The content
// depends only on the set of calls, never on the order of writers.
func CommitCalls(ctx context.Context, lk *lake.Lake, run string, step int64, calls []Call) error {
	rows := Rows(calls)
	key := lake.PartitionKey{Run: run, Table: schemas.LLMCallsSpec.Name, Step: step}
	return MergePartition(ctx, lk, key, rows, func(r schemas.LLMCallRow) string { return r.CallID })
}

// mergeLocks serializes merges of one partition within the process.
var mergeLocks sync.Map // partition key string → *sync.Mutex

// MergePartition commits rows into a partition that may already hold rows: rows whose id matches a
// committed row replace it, the result is sorted by id, and the partition is replaced atomically.
// Merges of one partition are serialized within the process. Between processes the lake's forced
// replace is last-writer-wins: after each write the partition is read back and, when another writer's
// replace dropped some of these rows, merged again after a random pause (up to eight attempts); a
// writer that replaces the partition later from a stale read can still drop rows, so concurrent
// processes merging into one partition (shards of one step) need a lake append to be safe.
func MergePartition[T schemas.Row](ctx context.Context, lk *lake.Lake, key lake.PartitionKey, rows []T, id func(T) string) error {
	lock, _ := mergeLocks.LoadOrStore(lk.URI()+"|"+key.String(), &sync.Mutex{})
	lock.(*sync.Mutex).Lock()
	defer lock.(*sync.Mutex).Unlock()
	var lastErr error
	for attempt := range 8 {
		if attempt > 0 {
			pause := time.Duration(10+rand.IntN(40*attempt)) * time.Millisecond
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		existing, err := lake.ReadRows[T](ctx, lk, key)
		committed := err == nil
		if err != nil && !errors.Is(err, lake.ErrNotCommitted) {
			lastErr = err
			continue
		}
		byID := make(map[string]T, len(existing)+len(rows))
		for _, r := range existing {
			byID[id(r)] = r
		}
		for _, r := range rows {
			byID[id(r)] = r
		}
		merged := make([]T, 0, len(byID))
		for _, r := range byID {
			merged = append(merged, r)
		}
		sort.Slice(merged, func(i, j int) bool { return id(merged[i]) < id(merged[j]) })
		written, err := lake.WriteRows(ctx, lk, key, merged, lake.WriteOptions{Force: committed})
		if err != nil {
			if !errors.Is(err, lake.ErrConcurrentWriter) && !errors.Is(err, lake.ErrCommitted) {
				return err
			}
			lastErr = err
			continue
		}
		// The manifest still holds exactly what this writer wrote: no one replaced it (the cheap check;
		// reading the rows back costs seconds on a paper-scale step).
		if m, err := lk.Manifest(ctx, key); err == nil && m.Rows == written.Rows && m.Bytes == written.Bytes {
			return nil
		}
		back, err := lake.ReadRows[T](ctx, lk, key)
		if err != nil {
			lastErr = err
			continue
		}
		present := make(map[string]bool, len(back))
		for _, r := range back {
			present[id(r)] = true
		}
		missing := 0
		for _, r := range rows {
			if !present[id(r)] {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		lastErr = fmt.Errorf("%s: %d rows replaced by a concurrent writer", key, missing)
	}
	return fmt.Errorf("llm: merge into %s: %w", key, lastErr)
}
