package rollout_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/grpo"
	"github.com/spadekit/spade/stages/rollout"
	"github.com/spadekit/spade/stages/stage"
)

// tokenIO sets rollout.token_io tokens with the toy chat template's text between turns.
func tokenIO(c *config.Config) {
	c.Rollout.GroupSize, c.Rollout.HintedGroupSize = 3, 2
	c.Rollout.TokenIO, c.Rollout.TokenIODelta, c.Rollout.TokenIOTemplate = config.TokenIOTokens, config.DeltaText, llmtest.TokenIOTemplate
	c.Rollout.Context = config.ContextTruncate
}

// Under rollout.token_io tokens, turn 0 is a chat call and every later turn a /completions call whose
// prompt is the previous prompt and completion followed by the server's tokens of the template around
// the observation, exactly; GRPO joins each play into one sample; and a replay of the run (no server)
// writes the same rows.
func TestRolloutTokenIOExtendsThePromptAndReplays(t *testing.T) {
	guess := envRow(0, 0, guessEnv, "bisect the interval", schemas.SkillMath, "games")
	f := newFixture(t, "games", []schemas.EnvRow{guess}, tokenIO)
	res := f.rollout(t, 0)
	if res.Episodes != 5 || res.Turns <= res.Episodes {
		t.Fatalf("played %d episodes, %d turns: want 5 multi-turn plays", res.Episodes, res.Turns)
	}
	if len(f.srv.Completions()) == 0 {
		t.Fatal("no /completions request: later turns went to chat")
	}
	calls := readStep[schemas.LLMCallRow](t, f, "llm_calls", 0)
	turns := readStep[schemas.TurnRow](t, f, "turns", 0)
	episodes := readStep[schemas.EpisodeRow](t, f, "episodes", 0)
	byID := map[string]*schemas.LLMCallRow{}
	for i := range calls {
		byID[calls[i].CallID] = &calls[i]
	}
	byEpisode := map[string][]schemas.TurnRow{}
	for _, tr := range turns {
		byEpisode[tr.EpisodeID] = append(byEpisode[tr.EpisodeID], tr)
	}
	later := 0
	for ep, ts := range byEpisode {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Turn < ts[j].Turn })
		for k := 1; k < len(ts); k++ {
			prev, cur := byID[ts[k-1].CallID], byID[ts[k].CallID]
			if prev == nil || cur == nil {
				t.Fatalf("episode %s turn %d: call not recorded", ep, k)
			}
			gap := llmtest.TokenizeText(rollout.TokenIOText(llmtest.TokenIOTemplate, ts[k].Observation))
			want := slices.Concat(prev.PromptTokenIDs, prev.CompletionTokenIDs, toInt32(gap))
			if !slices.Equal(cur.PromptTokenIDs, want) {
				t.Fatalf("episode %s turn %d: prompt ids\n %v\nwant the previous prompt, completion and observation tokens\n %v", ep, k, cur.PromptTokenIDs, want)
			}
			var body llm.CompletionRequestBody
			if err := json.Unmarshal([]byte(cur.Request), &body); err != nil || len(body.Prompt) != len(want) {
				t.Fatalf("episode %s turn %d: request is not a token-id /completions body: %v %.200s", ep, k, err, cur.Request)
			}
			tok := byID[llm.CallID(schemas.RoleAgent, 0, rollout.ObservationKey(ep, k))]
			if tok == nil || !slices.Equal(tok.PromptTokenIDs, toInt32(gap)) {
				t.Fatalf("episode %s turn %d: the observation's tokenize call is not recorded with its tokens", ep, k)
			}
			later++
		}
	}
	if later == 0 {
		t.Fatal("no play had a second turn")
	}
	samples, err := grpo.AgentSamples(grpo.AgentInput{Episodes: episodes, Turns: turns, Calls: calls, IncludeHinted: true,
		Unit: config.SampleEpisode, Failed: config.FailedDrop})
	if err != nil {
		t.Fatalf("episode assembly refuses the token-io plays: %v", err)
	}
	if len(samples) == 0 {
		t.Fatal("no episode samples")
	}
	for _, s := range samples {
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
	}

	// Replay: a second run of the same config answered from run r's recorded calls.
	ctx := context.Background()
	cfg := *f.cfg
	cfg.LLM.Agent.BaseURL = llm.ReplayPrefix + f.run
	laketest.NewRun(t, f.lk, "replayed", &cfg)
	laketest.Write(t, f.lk, lake.PartitionKey{Run: "replayed", Table: "envs", Step: 0}, []schemas.EnvRow{guess})
	client, err := llm.New(ctx, llm.SettingsFromConfig(&cfg, ""), llm.LakeReplayLoader(f.lk))
	if err != nil {
		t.Fatal(err)
	}
	before := f.srv.Count()
	env := f.env(t, "replayed", shard.All, false)
	env.SetClient(client)
	if _, err := stage.Within(ctx, env, stage.Rollout, 0, rollout.Run); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if f.srv.Count() != before {
		t.Fatalf("the replay called the server %d times", f.srv.Count()-before)
	}
	g := &fixture{lk: f.lk, run: "replayed"}
	sameRows(t, "llm_calls", calls, readStep[schemas.LLMCallRow](t, g, "llm_calls", 0))
	sameRows(t, "turns", turns, readStep[schemas.TurnRow](t, g, "turns", 0))
	replayed := readStep[schemas.EpisodeRow](t, g, "episodes", 0)
	for _, eps := range [][]schemas.EpisodeRow{episodes, replayed} {
		for i := range eps {
			eps[i].EnvCPUSeconds = 0 // measured, not replayed
		}
	}
	sameRows(t, "episodes", episodes, replayed)
}

// The config refuses token_io tokens without a template (delta text) or a chat template directory
// (delta template), with drop_oldest, or in the tools setting.
func TestTokenIOConfigIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*config.Config)
	}{
		{"no template", func(c *config.Config) { c.Rollout.TokenIOTemplate = "<|user|>" }},
		{"auto without template or dir", func(c *config.Config) { c.Rollout.TokenIODelta, c.Rollout.TokenIOTemplate = config.DeltaAuto, "" }},
		{"no chat template dir", func(c *config.Config) {
			c.Rollout.TokenIODelta, c.Rollout.ChatTemplateDir, c.GRPO.ModelPath = config.DeltaTemplate, "", ""
		}},
		{"drop_oldest", func(c *config.Config) { c.Rollout.Context = config.ContextDropOldest }},
		{"tools without a result template", func(c *config.Config) { c.Setting, c.Rollout.TokenIOToolResult = schemas.SettingTools, "" }},
	} {
		c, err := config.Preset("qwen3-4b-games")
		if err != nil {
			t.Fatal(err)
		}
		if c.Rollout.TokenIO != config.TokenIOTokens || c.Rollout.TokenIODelta != config.DeltaAuto {
			t.Fatalf("preset token_io %q, delta %q; want tokens, auto (the authors' actor)", c.Rollout.TokenIO, c.Rollout.TokenIODelta)
		}
		tokenIO(c)
		if err := c.Validate(); err != nil {
			t.Fatalf("valid token_io config refused: %v", err)
		}
		tc.mutate(c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: token_io tokens accepted", tc.name)
		}
	}
}

func sameRows[T any](t *testing.T, table string, a, b []T) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d rows, %d after replay", table, len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("%s row %d differs after replay:\n %+v\n %+v", table, i, a[i], b[i])
		}
	}
}

func toInt32(v []int64) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}
