package run

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
)

// planString renders a plan as "step:stage×shards<-after,..." lines, after naming tasks by step:stage.
func planString(tasks []Task) string {
	var lines []string
	for _, t := range tasks {
		var after []string
		for _, i := range t.After {
			after = append(after, fmt.Sprintf("%d:%s", tasks[i].Step, tasks[i].Name()))
		}
		lines = append(lines, fmt.Sprintf("%d:%s×%d<-%s", t.Step, t.Name(), t.Shards, strings.Join(after, ",")))
	}
	return strings.Join(lines, "\n")
}

// TestPlanFollowsTheStagesReads: two steps of a generating run (refresh_every 4) put sample, generate,
// the gate, rollout, regret and grpo at step 0 and rollout, regret and grpo at step 1; each waits for
// the producer of what it reads, the fan-out stages get the shard count, and step 1's rollout, whose
// envs were committed at step 0, also waits for step 0's grpo (the weights it plays with).
func TestPlanFollowsTheStagesReads(t *testing.T) {
	cfg, err := config.Preset("qwen3-4b-games")
	if err != nil {
		t.Fatal(err)
	}
	got := planString(Plan(cfg, Stages(), []int64{0, 1}, 2))
	want := strings.Join([]string{
		"0:sample×1<-",
		"0:generate×1<-0:sample",
		"0:gate×2<-0:generate",
		"0:rollout×2<-0:gate",
		"0:regret×1<-0:rollout",
		"0:grpo×1<-0:rollout,0:regret",
		"1:rollout×2<-0:gate,0:grpo",
		"1:regret×1<-1:rollout",
		"1:grpo×1<-1:rollout,1:regret",
	}, "\n")
	if got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	// A run on an imported pool: pool writes the envs rollout reads in place of the gate.
	if err := cfg.Set("sample.pool", "gpt55"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("sample.refresh_every", "1"); err != nil {
		t.Fatal(err)
	}
	got = planString(Plan(cfg, Stages(), []int64{3}, 4))
	want = "3:pool×1<-\n3:rollout×4<-3:pool\n3:regret×1<-3:rollout\n3:grpo×1<-3:rollout,3:regret"
	if got != want {
		t.Errorf("pool plan:\n%s\nwant:\n%s", got, want)
	}
}
