package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spadekit/spade/schemas"
)

// Finding is one check of Diagnose: its name, whether it passed, what was seen and, for a failure or a
// note, what to do.
type Finding struct {
	Check  string
	OK     bool
	Detail string
	Fix    string
}

// DiagnoseOptions say what Diagnose checks.
type DiagnoseOptions struct {
	// BaseURL is the server's /v1 root.
	BaseURL string
	// Model is the served model to call; empty takes the first one listed.
	Model string
	// APIKeyEnv names the variable holding the API key (sent as a bearer token); empty sends none.
	APIKeyEnv string
	// Publish is the grpo.publish mode whose endpoint is probed (sglang, vllm_reload, lora); empty or
	// none probes nothing.
	Publish string
	// Placement is grpo.placement: colocated also checks that the server can release and take back its
	// GPU memory (without doing it); anything else checks nothing more.
	Placement string
}

// Diagnose checks a live server as spade will use it, one Finding per check: the models it serves and
// which server it is; whether a chat call returns the prompt and completion token ids and log-probs;
// whether it tokenizes text (token mode's observations) and conversations (rollout.token_io_delta
// server); whether its chat template keeps the history (a second turn's prompt extends the first turn's
// prompt and completion), and which token mode that implies; and whether the publish endpoint exists.
func Diagnose(ctx context.Context, o DiagnoseOptions) []Finding {
	var out []Finding
	add := func(f Finding) { out = append(out, f) }
	models, server, err := listModels(ctx, o)
	if err != nil {
		add(Finding{Check: "models", Detail: err.Error(), Fix: "start the server, and pass its OpenAI root (http://host:port/v1) to --llm"})
		return out
	}
	model := o.Model
	if model == "" && len(models) > 0 {
		model = models[0]
	}
	if !slices.Contains(models, model) {
		add(Finding{Check: "models", Detail: fmt.Sprintf("%q is not served (served: %s)", model, strings.Join(models, ", ")), Fix: "set llm.agent.model and llm.designer.model to a served name (--model here)"})
		return out
	}
	add(Finding{Check: "models", OK: true, Detail: fmt.Sprintf("%s, served by %s (llm.server auto reads this)", model, server)})

	client, err := New(ctx, Settings{Roles: map[schemas.Role]RoleSettings{schemas.RoleAgent: {BaseURL: o.BaseURL, Model: model,
		APIKeyEnv: o.APIKeyEnv, MaxTokens: 24, Temperature: 1, TopP: 1, Server: server}}, MaxRetries: -1, Timeout: time.Minute}, nil)
	if err != nil {
		add(Finding{Check: "token ids", Detail: err.Error()})
		return out
	}
	first := []Message{{Role: "user", Content: "Say OK."}}
	a, err := client.Chat(ctx, Request{Role: schemas.RoleAgent, Key: "doctor/1", Messages: first})
	switch {
	case err != nil:
		add(Finding{Check: "token ids", Detail: err.Error()})
		return out
	case a.Failed():
		add(Finding{Check: "token ids", Detail: "a chat call failed: " + a.Err, Fix: "check the server's log"})
		return out
	}
	tokens := Finding{Check: "token ids", OK: len(a.PromptTokenIDs) > 0 && len(a.CompletionTokenIDs) > 0 && len(a.CompletionLogprobs) == len(a.CompletionTokenIDs),
		Detail: fmt.Sprintf("prompt %d ids, completion %d ids, %d log-probs", len(a.PromptTokenIDs), len(a.CompletionTokenIDs), len(a.CompletionLogprobs))}
	if !tokens.OK {
		tokens.Fix = "GRPO trains on the served ids: use vLLM 0.10.2 or later (return_token_ids) or SGLang 0.5.13 or later (return_prompt_token_ids, return_meta_info); every play of this server would be left out (missing_tokens)"
		if server == ServerSGLang {
			tokens.Fix = "upgrade SGLang to 0.5.13 or later, whose chat completions return the ids under return_prompt_token_ids and return_meta_info; every play of this server would be left out (missing_tokens)"
		}
	}
	add(tokens)

	tok, err := client.Tokenize(ctx, TokenizeRequest{Role: schemas.RoleAgent, Key: "doctor/tokenize", Text: "Hello, world!"})
	switch {
	case err == nil && !tok.Failed() && len(tok.PromptTokenIDs) > 0:
		add(Finding{Check: "tokenize", OK: true, Detail: fmt.Sprintf("/tokenize: %d ids for \"Hello, world!\"", len(tok.PromptTokenIDs))})
	default:
		add(Finding{Check: "tokenize", Detail: "/tokenize does not answer: " + failure(tok, err), Fix: "rollout.token_io tokens needs the server's /tokenize (vLLM and SGLang serve it at the root, beside /v1); use rollout.token_io chat"})
	}
	chatTok, err := client.TokenizeChat(ctx, TokenizeChatRequest{Role: schemas.RoleAgent, Key: "doctor/tokenize-chat", Messages: first, AddGenerationPrompt: true})
	if err == nil && !chatTok.Failed() && len(chatTok.PromptTokenIDs) > 0 {
		add(Finding{Check: "tokenize chat", OK: true, Detail: "renders and tokenizes a conversation: rollout.token_io_delta server works"})
	} else {
		add(Finding{Check: "tokenize chat", OK: true, Detail: "does not tokenize conversations (" + failure(chatTok, err) + ")", Fix: "under rollout.token_io tokens use rollout.token_io_delta template with rollout.chat_template_dir (or text)"})
	}

	if tokens.OK {
		second := append(append([]Message(nil), first...), Message{Role: "assistant", Content: a.Text}, Message{Role: "user", Content: "Again."})
		b, err := client.Chat(ctx, Request{Role: schemas.RoleAgent, Key: "doctor/2", Messages: second})
		if err == nil && !b.Failed() {
			head := append(append([]int64(nil), a.PromptTokenIDs...), a.CompletionTokenIDs...)
			if len(b.PromptTokenIDs) >= len(head) && slices.Equal(b.PromptTokenIDs[:len(head)], head) {
				add(Finding{Check: "history", OK: true, Detail: "the second turn's prompt extends the first turn's prompt and completion: chat mode's episode samples hold (until a completion is re-tokenized differently)",
					Fix: "rollout.token_io tokens builds each play as one sequence by construction, and is safe from re-tokenization drift"})
			} else {
				add(Finding{Check: "history", OK: true, Detail: "the chat template re-renders or re-tokenizes the history: chat mode's episode samples would be left out (broken_prefix)",
					Fix: "use rollout.token_io tokens for a non-thinking model, or rollout.token_io chat with grpo.sample_unit turn for a thinking one"})
			}
		}
	}

	if f, ok := probePublish(ctx, o); ok {
		add(f)
	}
	if o.Placement == "colocated" {
		add(probeMemory(ctx, o, server))
	}
	return out
}

// probeMemory checks, without releasing anything, that the server can release and take back its GPU
// memory for a colocated trainer: SGLang's GET /get_server_info reports enable_memory_saver (its memory
// routes work only with it); vLLM serves GET /is_sleeping only in development mode with sleep mode on.
func probeMemory(ctx context.Context, o DiagnoseOptions, server Server) Finding {
	root := strings.TrimSuffix(strings.TrimRight(o.BaseURL, "/"), "/v1")
	path, fix := "/is_sleeping", "start vLLM with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1, or set grpo.placement separate"
	if server == ServerSGLang {
		path, fix = "/get_server_info", "start SGLang with --enable-memory-saver, or set grpo.placement separate"
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, root+path, nil)
	if err != nil {
		return Finding{Check: "memory", Detail: err.Error(), Fix: fix}
	}
	if o.APIKeyEnv != "" {
		if key := os.Getenv(o.APIKeyEnv); key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Finding{Check: "memory", Detail: err.Error(), Fix: fix}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Finding{Check: "memory", Detail: fmt.Sprintf("GET %s: HTTP %d", path, resp.StatusCode), Fix: fix}
	}
	if server == ServerSGLang {
		var info struct {
			EnableMemorySaver bool `json:"enable_memory_saver"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || !info.EnableMemorySaver {
			return Finding{Check: "memory", Detail: "enable_memory_saver is off: /release_memory_occupation would free nothing", Fix: fix}
		}
		return Finding{Check: "memory", OK: true, Detail: "enable_memory_saver is on: /release_memory_occupation and /resume_memory_occupation work (grpo.placement colocated)"}
	}
	return Finding{Check: "memory", OK: true, Detail: "/sleep and /wake_up are served (grpo.placement colocated)"}
}

// failure words a failed call for a finding.
func failure(c *Completion, err error) string {
	if err != nil {
		return err.Error()
	}
	if c != nil && c.Err != "" {
		return c.Err
	}
	return "no tokens"
}

// listModels reads GET /models: the served names and the server that owns them.
func listModels(ctx context.Context, o DiagnoseOptions) ([]string, Server, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, strings.TrimRight(o.BaseURL, "/")+"/models", nil)
	if err != nil {
		return nil, "", err
	}
	if key := os.Getenv(o.APIKeyEnv); o.APIKeyEnv != "" && key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s/models: %w", o.BaseURL, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s/models: HTTP %d: %s", o.BaseURL, resp.StatusCode, prefix(string(raw), 200))
	}
	var list modelList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, "", fmt.Errorf("GET %s/models: not a model list: %w", o.BaseURL, err)
	}
	var names []string
	server := ServerVLLM
	for i, m := range list.Data {
		names = append(names, m.ID)
		if i == 0 {
			server = DetectServer(m.OwnedBy)
		}
	}
	return names, server, nil
}

// publishEndpoints maps a grpo.publish mode to the endpoint it posts to (relative to the server root or
// /v1) and the fix when it is missing.
var publishEndpoints = map[string]struct{ path, fix string }{
	"sglang":      {"/update_weights_from_disk", "grpo.publish sglang needs an SGLang server (python -m sglang.launch_server)"},
	"vllm_reload": {"/collective_rpc", "grpo.publish vllm_reload needs vLLM started with VLLM_SERVER_DEV_MODE=1"},
	"lora":        {"/v1/load_lora_adapter", "grpo.publish lora needs vLLM started with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True"},
}

// probePublish checks that the publish endpoint exists without calling it: a GET of a POST-only
// route answers 405 (or 4xx for a missing body), a missing route 404.
func probePublish(ctx context.Context, o DiagnoseOptions) (Finding, bool) {
	ep, ok := publishEndpoints[o.Publish]
	if !ok {
		return Finding{}, false
	}
	root := strings.TrimSuffix(strings.TrimRight(o.BaseURL, "/"), "/v1")
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, root+ep.path, nil)
	if err != nil {
		return Finding{Check: "publish", Detail: err.Error(), Fix: ep.fix}, true
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Finding{Check: "publish", Detail: err.Error(), Fix: ep.fix}, true
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return Finding{Check: "publish", Detail: fmt.Sprintf("%s: HTTP 404", ep.path), Fix: ep.fix}, true
	}
	return Finding{Check: "publish", OK: true, Detail: fmt.Sprintf("%s is served (grpo.publish %s)", ep.path, o.Publish)}, true
}
