package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
)

// TestAgentReplicasArePublishTargets: a full-weights publish reaches every replica listed in
// llm.agent.base_url, and a LoRA publish, which loads into one server, is refused with several.
func TestAgentReplicasArePublishTargets(t *testing.T) {
	cfg, err := config.Preset("qwen3-4b-games")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("llm.agent.base_url", "http://a:8000/v1, http://b:8000/v1"); err != nil {
		t.Fatal(err)
	}
	if got := cfg.PublishURLs(); !slices.Equal(got, []string{"http://a:8000/v1", "http://b:8000/v1"}) {
		t.Fatalf("PublishURLs = %q, want both replicas", got)
	}
	for key, value := range map[string]string{"grpo.trainer": "torch", "grpo.publish": "lora", "grpo.lora_rank": "8"} {
		if err := cfg.Set(key, value); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "grpo.publish") {
		t.Fatalf("lora publish with two replicas: %v, want an error naming grpo.publish", err)
	}
}
