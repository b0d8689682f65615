package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/chattemplate/chattemplatetest"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/grpo"
)

// TestEveryPresetTrainsTheAuthorsBatch runs two steps (one pool) of each SPADE preset on the emulator,
// the sizes shrunk with the ratio kept (2 envs per pool and a global batch of 4, as 24 and 192 give 8
// plays an env), and checks per step what grpo_batches holds against the authors' rules, computed here
// from the step's assembled samples: every accepted env plays ⌈4 / accepted⌉ unhinted episodes; the batch
// is the Designer samples (the pool's, at its last step), then the Agent samples in play order, then
// whole plays copied from the first while the plays are fewer than 4 minus the Designer samples, cut to
// 4 at the tail; nothing is padded while an Agent play exists.
func TestEveryPresetTrainsTheAuthorsBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("six two-step runs in the real sandbox; skipped with -short")
	}
	const batch = 4
	for _, preset := range config.PresetNames() {
		if strings.HasSuffix(preset, "-"+config.FixedGPT55) || strings.HasSuffix(preset, "-"+config.FixedRLVE) {
			continue
		}
		t.Run(preset, func(t *testing.T) {
			which := chattemplatetest.NonThinking
			if strings.HasPrefix(preset, "qwen3-8b") {
				which = chattemplatetest.Hybrid
			}
			setting := schemas.SettingGames
			if strings.HasSuffix(preset, "-tools") {
				setting = schemas.SettingTools
			}
			emu := llmtest.StartEmulator(t, chattemplatetest.Start(t, which), presetScript(t, setting),
				llmtest.EmulatorOptions{Layout: llmtest.LayoutSGLang}, "designer-model", "agent-model")
			dir := t.TempDir()
			env := []string{"SPADE_LAKE=" + dir, "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN=p", "OPENAI_API_KEY="}
			must(t, env, "corpus", "import", "--name", "testdata", repoFile("testdata/corpus/corpus.jsonl"))
			sets := []string{"llm.designer.base_url=" + emu.URL, "llm.designer.model=designer-model",
				"llm.agent.base_url=" + emu.URL, "llm.agent.model=agent-model", "sample.corpus=testdata",
				"sample.envs_per_step=2", "sample.refresh_every=2", fmt.Sprintf("grpo.global_batch=%d", batch),
				"rollout.hinted_group_size=2", "rollout.max_turns=3", "gate.max_attempts=2"}
			args := []string{"init", "--preset", preset}
			cfg, err := config.Preset(preset)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range sets {
				args = append(args, "--set", s)
				k, v, _ := strings.Cut(s, "=")
				if err := cfg.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			must(t, env, args...)
			if r := spade(t, env, "", "run", "--steps", "0-1"); r.code != 0 {
				t.Fatalf("spade run: exit %d\n%s\n%s", r.code, tail(r.stdout, 20), tail(r.stderr, 20))
			}
			ctx := context.Background()
			lk, err := lake.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			envs, err := lake.ReadStep[schemas.EnvRow](ctx, lk, "p", schemas.EnvsSpec.Name, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(envs) == 0 {
				results, _ := lake.ReadStep[schemas.GateResultRow](ctx, lk, "p", schemas.GateResultsSpec.Name, 0)
				var failures []string
				for _, r := range results {
					if !r.Passed && !r.Skipped {
						failures = append(failures, r.Check+": "+r.Error)
					}
				}
				t.Fatalf("the gate accepted no env: %s", strings.Join(failures, "\n"))
			}
			perEnv := (batch + len(envs) - 1) / len(envs)
			for step := int64(0); step < 2; step++ {
				episodes, err := lake.ReadStep[schemas.EpisodeRow](ctx, lk, "p", schemas.EpisodesSpec.Name, step)
				if err != nil {
					t.Fatal(err)
				}
				plays := map[string]int{}
				for _, e := range episodes {
					if !e.Hinted {
						plays[e.EnvID]++
					}
				}
				for _, e := range envs {
					if plays[e.EnvID] != perEnv {
						t.Errorf("step %d env %s: %d unhinted plays, want ⌈%d / %d accepted⌉ = %d", step, e.EnvID, plays[e.EnvID], batch, len(envs), perEnv)
					}
				}
				asm, err := grpo.Assemble(ctx, lk, "p", cfg, step)
				if err != nil {
					t.Fatal(err)
				}
				if (len(asm.Designer) > 0) != (step == 1) {
					t.Errorf("step %d: %d Designer samples assembled, want them at the pool's last step only", step, len(asm.Designer))
				}
				want := authorsBatch(asm.Agent, asm.Designer, batch)
				rows, err := lake.ReadStep[schemas.GRPOBatchRow](ctx, lk, "p", schemas.GRPOBatchesSpec.Name, step)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rows {
					if r.Pad {
						t.Errorf("step %d: inert pad %s with %d Agent samples to copy", step, r.SampleID, len(asm.Agent))
					}
					got = append(got, r.SampleID)
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("step %d: grpo_batches holds %v, want %v", step, got, want)
				}
			}
		})
	}
}

// authorsBatch lists the sample ids of the authors' batch of size b: the Designer's, the Agent's in play
// order, then copies "dup<k>/<id>" of whole plays k mod n while n + k < b − Designer samples, the first b.
func authorsBatch(agent, designer []schemas.GRPOBatchRow, b int) []string {
	var ids, order []string
	byPlay := map[string][]string{}
	for _, r := range designer {
		ids = append(ids, r.SampleID)
	}
	for _, r := range agent {
		ids = append(ids, r.SampleID)
		if _, ok := byPlay[r.EpisodeID]; !ok {
			order = append(order, r.EpisodeID)
		}
		byPlay[r.EpisodeID] = append(byPlay[r.EpisodeID], r.SampleID)
	}
	for k := 0; len(order) > 0 && len(order)+k < b-len(designer); k++ {
		for _, id := range byPlay[order[k%len(order)]] {
			ids = append(ids, fmt.Sprintf("dup%d/%s", k, id))
		}
	}
	return ids[:min(b, len(ids))]
}
