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

// TestColocatedPlacementNeedsAResidentFullWeightsTrainer: grpo.placement colocated (the presets') is
// refused, naming the key, with a per-step trainer or a publish mode whose servers cannot release their
// memory; separate takes either.
func TestColocatedPlacementNeedsAResidentFullWeightsTrainer(t *testing.T) {
	for _, tc := range []struct {
		sets map[string]string
		want string
	}{
		{map[string]string{"grpo.trainer_mode": "per_step"}, "grpo.trainer_mode resident"},
		{map[string]string{"grpo.publish": "command", "grpo.publish_command": "true"}, "grpo.publish sglang or vllm_reload"},
		{map[string]string{"grpo.publish": "none"}, "grpo.publish sglang or vllm_reload"},
		{map[string]string{"grpo.publish": "none", "grpo.placement": "separate"}, ""},
		{map[string]string{"grpo.trainer_mode": "per_step", "grpo.placement": "separate"}, ""},
		{map[string]string{"grpo.cpu_offload": "optimizer_params"}, "grpo.trainer_gpus >= 2"},
	} {
		cfg, err := config.Preset("qwen3-8b-games")
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Set("grpo.trainer", "torch"); err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.sets {
			if err := cfg.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		err = cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.sets, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"grpo.`)):
			t.Errorf("%v: %v, want an error saying %q", tc.sets, err, tc.want)
		}
	}
}
