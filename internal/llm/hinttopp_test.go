package llm_test

import (
	"context"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// The hint call of every preset reaches the server with top-p 0.9 while the Designer's own calls keep
// llm.designer.top_p (0.95); a config with generate.hint_top_p 0 (a run recorded before the key) sends
// the Designer's top-p on the hint call, as those runs did.
func TestHintCallSendsItsOwnTopP(t *testing.T) {
	srv := llmtest.Start(t, echo, model)
	for _, c := range []struct {
		hintTopP            float64
		wantHint, wantDesig float64
	}{{0.9, 0.9, 0.95}, {0, 0.95, 0.95}} {
		for _, name := range config.PresetNames() {
			cfg, err := config.Preset(name)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Generate.HintTopP != 0.9 {
				t.Fatalf("preset %s: generate.hint_top_p %v, want 0.9", name, cfg.Generate.HintTopP)
			}
			cfg.Generate.HintTopP = c.hintTopP
			cfg.LLM.Designer.BaseURL, cfg.LLM.Designer.Model = srv.URL, model
			cfg.LLM.Agent.BaseURL, cfg.LLM.Agent.Model = srv.URL, model
			cl, err := llm.New(context.Background(), llm.SettingsFromConfig(cfg, ""), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, role := range []schemas.Role{schemas.RoleHint, schemas.RoleDesigner} {
				if _, err := cl.Chat(context.Background(), ask(role, "k", "write")); err != nil {
					t.Fatal(err)
				}
			}
			got := srv.Requests()
			hint, designer := got[len(got)-2], got[len(got)-1]
			if hint.TopP == nil || *hint.TopP != c.wantHint || designer.TopP == nil || *designer.TopP != c.wantDesig {
				t.Errorf("preset %s, hint_top_p %v: hint top_p %v, designer top_p %v; want %v, %v",
					name, c.hintTopP, hint.TopP, designer.TopP, c.wantHint, c.wantDesig)
			}
		}
	}
}
