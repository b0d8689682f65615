package grpo

import (
	"fmt"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

// compactInput is one env's six two-turn plays, episode samples whose second prompt extends the first:
// two won, two lost at done, one out of turns and one cut at max_tokens.
func compactInput() AgentInput {
	var in AgentInput
	ends := []schemas.EndedBy{schemas.EndedDone, schemas.EndedDone, schemas.EndedDone, schemas.EndedDone, schemas.EndedMaxTurns, schemas.EndedTruncated}
	for k, ended := range ends {
		id := fmt.Sprintf("ep%d", k)
		ret := 0.0
		if k < 2 {
			ret = 1
		}
		in.Episodes = append(in.Episodes, schemas.EpisodeRow{EnvID: "A", EpisodeID: id, Index: int32(k), Return: ret, EndedBy: ended})
		first := schemas.LLMCallRow{CallID: id + "/0", Role: schemas.RoleAgent, PromptTokenIDs: []int32{1, 2},
			CompletionTokenIDs: []int32{int32(10 + k), 3}, CompletionLogprobs: []float32{-.5, -.1}}
		second := schemas.LLMCallRow{CallID: id + "/1", Role: schemas.RoleAgent, PromptTokenIDs: []int32{1, 2, int32(10 + k), 3, 7},
			CompletionTokenIDs: []int32{4, 3}, CompletionLogprobs: []float32{-.2, -.3}}
		in.Calls = append(in.Calls, first, second)
		in.Turns = append(in.Turns, schemas.TurnRow{EpisodeID: id, EnvID: "A", Turn: 0, CallID: first.CallID},
			schemas.TurnRow{EpisodeID: id, EnvID: "A", Turn: 1, CallID: second.CallID})
	}
	return in
}

// Under grpo.compact_filter the plays that ran out (max_turns, truncated) keep their place and return in
// the group, so every advantage equals the unfiltered one, but their samples train no token; the other
// plays' samples are untouched. Off, every sample trains. Both sample units.
func TestCompactFilterMasksPlaysThatRanOut(t *testing.T) {
	for _, unit := range []config.SampleUnit{config.SampleEpisode, config.SampleTurn} {
		in := compactInput()
		in.Unit = unit
		plain, err := AssembleAgent(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Compact = true
		compact, err := AssembleAgent(in)
		if err != nil {
			t.Fatal(err)
		}
		if plain.Compacted != 0 || compact.Compacted != 2 || len(plain.Samples) != len(compact.Samples) || len(plain.Samples) == 0 {
			t.Fatalf("%s: compacted %d/%d, samples %d/%d; want 0/2 and the same samples", unit, plain.Compacted, compact.Compacted, len(plain.Samples), len(compact.Samples))
		}
		ended := map[string]schemas.EndedBy{}
		for _, e := range in.Episodes {
			ended[e.EpisodeID] = e.EndedBy
		}
		masked := 0
		for i, s := range compact.Samples {
			p := plain.Samples[i]
			if s.SampleID != p.SampleID || s.Advantage != p.Advantage {
				t.Errorf("%s sample %s: advantage %v, unfiltered %s %v; the filter must not move the group", unit, s.SampleID, s.Advantage, p.SampleID, p.Advantage)
			}
			trained := 0
			for k := range s.ResponseIDs {
				if s.Trained(k) {
					trained++
				}
			}
			ranOut := ended[s.EpisodeID] == schemas.EndedMaxTurns || ended[s.EpisodeID] == schemas.EndedTruncated
			switch {
			case ranOut && (trained != 0 || len(s.LossMask) != len(s.ResponseIDs)):
				t.Errorf("%s sample %s of a play that ran out trains %d tokens (mask %v)", unit, s.SampleID, trained, s.LossMask)
			case !ranOut && fmt.Sprint(s.LossMask) != fmt.Sprint(p.LossMask):
				t.Errorf("%s sample %s: mask %v, unfiltered %v", unit, s.SampleID, s.LossMask, p.LossMask)
			}
			if ranOut {
				masked++
			}
			if p.Advantage == 0 && ranOut {
				t.Errorf("%s: a play that ran out has advantage 0; the fixture should give it a non-zero one", unit)
			}
		}
		if masked == 0 {
			t.Errorf("%s: no sample of a play that ran out", unit)
		}
	}
}
