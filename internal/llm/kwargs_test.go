package llm_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
)

// chat_template_kwargs is sent exactly as set, and left out when unset, so an old request encodes (and
// its replay key hashes) as before.
func TestChatTemplateKwargsSentOnlyWhenSet(t *testing.T) {
	c := newClient(t, settings("http://127.0.0.1:1/v1"))
	req := llm.Request{Role: schemas.RoleAgent, Key: "k", Messages: []llm.Message{{Role: "user", Content: "hi"}}}
	plain, plainKey, err := c.EncodeRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte("chat_template_kwargs")) {
		t.Fatalf("unset kwargs were sent: %s", plain)
	}
	req.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
	raw, key, err := c.EncodeRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Kwargs map[string]any `json:"chat_template_kwargs"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || body.Kwargs["enable_thinking"] != false || len(body.Kwargs) != 1 {
		t.Fatalf("kwargs in the body: %v %s", err, raw)
	}
	if key == plainKey {
		t.Fatal("the replay key ignores chat_template_kwargs")
	}
}
