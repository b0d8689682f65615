package llm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// SettingsFromConfig builds client settings from a run config. weightsVersion, when not empty, is the
// name under which the current trained weights are served (a LoRA adapter published by the trainer): the
// Agent always calls it, and so does the Designer (both roles share θ) unless ablation.frozen_designer
// pins the Designer to llm.designer.model; a frozen Designer is never trained, so its requests are Plain
// (portable to hosted APIs). The screen role falls back to the Agent's endpoint and model.
func SettingsFromConfig(cfg *config.Config, weightsVersion string) Settings {
	role := func(r config.Role, trained bool) RoleSettings {
		rs := RoleSettings{BaseURL: r.BaseURL, Model: r.Model, APIKeyEnv: r.APIKeyEnv, MaxTokens: r.MaxTokens,
			Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, WeightsVersion: r.Model, ChatTemplateKwargs: r.Thinking.Kwargs()}
		switch cfg.LLM.Server {
		case config.ServerVLLM:
			rs.Server = ServerVLLM
		case config.ServerSGLang:
			rs.Server = ServerSGLang
		}
		if trained && weightsVersion != "" {
			rs.WeightsVersion = weightsVersion
			if !cfg.GRPO.Publish.FullWeights() {
				rs.Model = weightsVersion // an adapter is called by its name
			}
			// A full checkpoint replaces the served weights in place: the served model name stays.
		}
		return rs
	}
	designer := role(cfg.LLM.Designer, !cfg.Ablation.FrozenDesigner)
	designer.Plain = cfg.Ablation.FrozenDesigner
	s := Settings{
		Roles: map[schemas.Role]RoleSettings{
			schemas.RoleDesigner: designer,
			schemas.RoleAgent:    role(cfg.LLM.Agent, true),
		},
		MaxInFlight:       cfg.LLM.MaxInFlight,
		ServerMaxInFlight: cfg.LLM.ServerMaxInFlight,
		Timeout:           time.Duration(cfg.LLM.TimeoutSeconds) * time.Second,
		MaxRetries:        cfg.LLM.MaxRetries,
		Seed:              cfg.Seed,
		// A config read without the key (an old run) takes the preset's none, the value it sent.
		OmitToolChoice: cfg.LLM.ToolChoice == config.ToolChoiceOmit,
	}
	if cfg.LLM.MaxRetries == 0 {
		s.MaxRetries = -1 // zero in the config means no retries
	}
	screen := cfg.LLM.Screen
	// A screen with neither a model nor an endpoint of its own is the Agent's model, the weights being
	// trained (the authors' validator, "self"), so it follows the published weights as the Agent does.
	selfScreen := screen.BaseURL == "" && screen.Model == ""
	if screen.BaseURL == "" {
		screen.BaseURL = cfg.LLM.Agent.BaseURL
	}
	if screen.Model == "" {
		screen.Model = cfg.LLM.Agent.Model
	}
	s.Roles[schemas.RoleScreen] = role(screen, selfScreen)
	// The hint writer is the Designer's model (endpoint, weights) sampled with the hint's own temperature,
	// top-p and length (generate.hint_temperature, generate.hint_top_p, generate.hint_max_tokens).
	hint := designer
	hint.Temperature, hint.MaxTokens = cfg.Generate.HintTemperature, cfg.Generate.HintMaxTokens
	if cfg.Generate.HintTopP > 0 {
		hint.TopP = cfg.Generate.HintTopP
	}
	if kw := cfg.Generate.HintThinking.Kwargs(); kw != nil {
		hint.ChatTemplateKwargs = kw // the hint call's own thinking, else the Designer's
	}
	s.Roles[schemas.RoleHint] = hint
	return s
}

// WithEnvBaseURL returns s with $OPENAI_BASE_URL as the base URL of every role that has none.
func (s Settings) WithEnvBaseURL() Settings {
	env := os.Getenv("OPENAI_BASE_URL")
	roles := make(map[schemas.Role]RoleSettings, len(s.Roles))
	for r, rs := range s.Roles {
		if rs.BaseURL == "" {
			rs.BaseURL = env
		}
		roles[r] = rs
	}
	s.Roles = roles
	return s
}

// NewFromConfig returns a client for a run config, replaying from lk when a role's base URL is
// "replay:<run>", and checks the given roles before any work (see Check).
func NewFromConfig(ctx context.Context, cfg *config.Config, lk *lake.Lake, weightsVersion string, roles ...schemas.Role) (*Client, error) {
	c, err := New(ctx, SettingsFromConfig(cfg, weightsVersion).WithEnvBaseURL(), LakeReplayLoader(lk))
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
		relative := ""
		if name, uri, ok := strings.Cut(run, "@"); ok {
			if isRelativePath(uri) {
				relative = uri
			}
			other, err := lake.Open(ctx, uri)
			if err != nil {
				return nil, err
			}
			lk, run = other, name
		}
		if _, err := lk.RunConfig(ctx, run); err != nil {
			if relative != "" {
				wd, _ := os.Getwd()
				return nil, fmt.Errorf("%w (the replay lake %q in run.json is a relative path, read from the current directory %s: run from the directory the run was created in, or create the run again with this version of spade init, which stores it absolute)", err, relative, wd)
			}
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

// isRelativePath reports whether uri is a relative local directory (not s3://…, not absolute).
func isRelativePath(uri string) bool {
	return uri != "" && !strings.Contains(uri, "://") && !filepath.IsAbs(uri)
}

// AbsReplayURL returns base with the lake of a "replay:<run>@<dir>" made absolute against the current
// directory, so run.json names the same recording wherever a later command runs (spade init calls it);
// any other base URL is returned unchanged.
func AbsReplayURL(base string) (string, error) {
	rest, ok := strings.CutPrefix(base, "replay:")
	if !ok {
		return base, nil
	}
	name, uri, ok := strings.Cut(rest, "@")
	if !ok || !isRelativePath(uri) {
		return base, nil
	}
	abs, err := filepath.Abs(uri)
	if err != nil {
		return "", err
	}
	return "replay:" + name + "@" + abs, nil
}

// WriteCalls writes calls in tx as the llm_calls fragment `fragment` of a step of tx's run
// (lake.PartitionKey.Fragment): every writer of a step's calls (generate, the gate's regenerations and
// screen, rollout and its shard processes) writes its own fragment, so no writer replaces another's rows;
// readers take the whole step with lake.ReadStep. Rows are sorted by call_id, so the content depends only
// on the set of calls. opts carries the writer's shard (see lake.WriteOptions).
func WriteCalls(ctx context.Context, tx *lake.Txn, step int64, fragment string, calls []Call, opts lake.WriteOptions) error {
	rows := Rows(calls)
	sort.Slice(rows, func(i, j int) bool { return rows[i].CallID < rows[j].CallID })
	key := lake.PartitionKey{Run: tx.Run(), Table: schemas.LLMCallsSpec.Name, Step: step, Fragment: fragment}
	if _, err := lake.WriteRows(ctx, tx, key, rows, opts); err != nil {
		return fmt.Errorf("llm: commit calls: %w", err)
	}
	return nil
}
