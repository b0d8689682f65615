package analytics

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// gate_contradictions, hand-computed: env "t" passed the trivial check yet every unhinted play solved it
// at its first turn; env "h" passed hint_leak yet every hinted play solved it at once while the unhinted
// ones did not; env "o" was never checked (the official gate) and is trivial in rollout; env "fine"
// needed several turns, and env "few" has too few plays to say.
func TestGateContradictionsModel(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "r", config.Default())
	var gate []schemas.GateResultRow
	for _, env := range []string{"t", "h", "fine", "few"} {
		for _, check := range []string{"trivial", "hint_leak"} {
			gate = append(gate, schemas.GateResultRow{Step: 0, EnvID: env, Slot: 0, Attempt: 1, Check: check, Passed: true})
		}
	}
	laketest.Write(t, lk, lake.PartitionKey{Run: "r", Table: schemas.GateResultsSpec.Name, Step: 0}, gate)
	var episodes []schemas.EpisodeRow
	add := func(env string, hinted bool, n, atOnce int) {
		for i := 0; i < n; i++ {
			e := schemas.EpisodeRow{Step: 0, PoolStep: 0, EnvID: env, Skill: schemas.SkillMath, EpisodeID: fmt.Sprintf("%s-%v-%d", env, hinted, i),
				Hinted: hinted, Index: int32(i), EndedBy: schemas.EndedDone, Turns: 3}
			if i < atOnce {
				e.Success, e.Turns, e.Return = true, 1, 1
			}
			episodes = append(episodes, e)
		}
	}
	add("t", false, 8, 8)
	add("t", true, 4, 4)
	add("h", false, 8, 1)
	add("h", true, 4, 4)
	add("o", false, 4, 4)
	add("fine", false, 8, 2)
	add("fine", true, 4, 1)
	add("few", false, 3, 3)
	laketest.Write(t, lk, lake.PartitionKey{Run: "r", Table: schemas.EpisodesSpec.Name, Step: 0}, episodes)
	s, err := Open(ctx, lk, "r", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tbl, err := Query(ctx, s.DB, "select env_id, kind, gate_checked from gate_contradictions order by env_id, kind")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range tbl.Rows {
		got = append(got, fmt.Sprintf("%s %s %v", tbl.Rows[i][0], tbl.Rows[i][1], tbl.Rows[i][2]))
	}
	if want := "h hint_leak true; o trivial false; t trivial true"; strings.Join(got, "; ") != want {
		t.Fatalf("gate_contradictions = %q, want %q", strings.Join(got, "; "), want)
	}
}
