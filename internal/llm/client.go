package llm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spadekit/spade/schemas"
)

// ReplayLoader returns every recorded call of a run; the lake-backed one is LakeReplayLoader.
type ReplayLoader func(ctx context.Context, run string) ([]Call, error)

// Client makes chat calls for the roles of its Settings and records each one.
type Client struct {
	settings Settings
	backends map[schemas.Role]backend
	// inFlight bounds the calls in flight over every role (Settings.MaxInFlight); nil bounds them only
	// per server (Settings.ServerMaxInFlight), so they follow the plays.
	inFlight chan struct{}
	// calling counts the calls in flight; latency keeps the servers' latest latencies (Load).
	calling atomic.Int64
	latency *latencies

	mu    sync.Mutex
	calls []Call
	// servers is the server each role talks to: RoleSettings.Server, else what Check detected (vLLM's
	// layout until then).
	servers map[schemas.Role]Server
}

// New returns a Client for the roles in s. A role whose base URL is "replay:<run>" is answered from
// load(run); load may be nil when no role replays. New does no I/O except loading replayed runs; call
// Check before any work to fail fast on a bad endpoint.
func New(ctx context.Context, s Settings, load ReplayLoader) (*Client, error) {
	s = s.withDefaults()
	c := &Client{settings: s, backends: map[schemas.Role]backend{}, servers: map[schemas.Role]Server{}, latency: &latencies{}}
	if s.MaxInFlight > 0 {
		c.inFlight = make(chan struct{}, s.MaxInFlight)
	}
	httpClient := &http.Client{Transport: newHTTPTransport(s.connections())}
	replays := map[string]*replayBackend{}
	for role, rs := range s.Roles {
		if run, ok := strings.CutPrefix(rs.BaseURL, ReplayPrefix); ok {
			if load == nil {
				return nil, fmt.Errorf("llm: %s: base URL %q needs a lake to replay from", role, rs.BaseURL)
			}
			rb, ok := replays[run]
			if !ok {
				calls, err := load(ctx, run)
				if err != nil {
					return nil, fmt.Errorf("llm: %s: load recorded calls of run %q: %w", role, run, err)
				}
				rb = newReplayBackend(run, calls)
				replays[run] = rb
			}
			c.backends[role] = rb
			if rs.Server == "" {
				c.servers[role] = rb.servers[role] // a replay encodes as the recording did
			}
			continue
		}
		c.backends[role] = newHTTPBackend(rs, s, httpClient, c.latency)
	}
	return c, nil
}

// Check verifies every role before any work: the endpoint answers GET /models and serves the configured
// model, or the replayed run has calls recorded for the role. The error names the role and what to fix.
func (c *Client) Check(ctx context.Context, roles ...schemas.Role) error {
	if len(roles) == 0 {
		for _, r := range schemas.RoleValues() {
			if _, ok := c.backends[r]; ok {
				roles = append(roles, r)
			}
		}
	}
	for _, r := range roles {
		b, ok := c.backends[r]
		if !ok {
			return fmt.Errorf("llm: role %s is not configured", r)
		}
		server, err := b.check(ctx, r)
		if err != nil {
			return err
		}
		c.mu.Lock()
		if rs := c.settings.Roles[r]; rs.Server == "" && server != "" {
			c.servers[r] = server
		}
		c.mu.Unlock()
	}
	return nil
}

// Server is the server a role talks to: llm.server when set, else the one Check detected (or the
// recording's, for a replay), else vLLM.
func (c *Client) Server(role schemas.Role) Server {
	if s := c.settings.Roles[role].Server; s != "" {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.servers[role]; s != "" {
		return s
	}
	return ServerVLLM
}

// Settings returns the client's settings with defaults filled in.
func (c *Client) Settings() Settings { return c.settings }

// CallID returns the stable id of the call (role, step, key): 16 hex digits of SHA-256.
func CallID(role schemas.Role, step int64, key string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", role, step, key)))
	return hex.EncodeToString(sum[:8])
}

// RequestSeed returns the sampling seed of a call: the first 62 bits of SHA-256(run seed, role, step,
// key). It is sent as the request's `seed`, so equal conversations in different episodes still differ.
func RequestSeed(runSeed int64, role schemas.Role, step int64, key string) int64 {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%d\x00%s", runSeed, role, step, key)))
	return int64(binary.BigEndian.Uint64(sum[:8]) >> 2)
}

// callKind is the endpoint a call goes to.
type callKind int

const (
	kindChat       callKind = iota // POST /chat/completions
	kindCompletion                 // POST /completions with a token-id prompt (Request.PromptIDs)
	kindTokenize                   // POST /tokenize (TokenizeRequest)
	kindGenerate                   // SGLang's POST /generate with input_ids (Request.PromptIDs)
)

// EncodeRequest returns the exact body Chat sends for req and its hex SHA-256 (the replay key): a Chat
// Completions body, or a /completions body when req.PromptIDs is set.
func (c *Client) EncodeRequest(req *Request) ([]byte, string, error) {
	rs, ok := c.settings.Roles[req.Role]
	if !ok {
		return nil, "", fmt.Errorf("llm: role %s is not configured", req.Role)
	}
	if req.PromptIDs != nil {
		return c.encodeCompletion(req, rs)
	}
	body := ChatRequestBody{
		Model:    rs.Model,
		Messages: req.Messages,
		Tools:    req.Tools,
		Seed:     RequestSeed(c.settings.Seed, req.Role, req.Step, req.Key),
	}
	if rs.Plain {
		body.MaxCompletionTokens = req.maxTokens(rs.MaxTokens)
		if rs.Temperature != 1 {
			body.Temperature = &rs.Temperature
		}
		if rs.TopP != 1 {
			body.TopP = &rs.TopP
		}
	} else {
		yes, zero := true, 0
		body.MaxTokens = req.maxTokens(rs.MaxTokens)
		body.Temperature, body.TopP = &rs.Temperature, &rs.TopP
		body.TopK = max(rs.TopK, 0)
		body.Logprobs, body.TopLogprobs = &yes, &zero
		if c.Server(req.Role) == ServerSGLang {
			body.ReturnPromptTokenIDs, body.ReturnMetaInfo = &yes, &yes
		} else {
			body.ReturnTokenIDs = &yes
		}
	}
	if len(req.Tools) > 0 && !c.settings.OmitToolChoice && c.Server(req.Role) != ServerSGLang {
		// The tools go to the server so its chat template renders them; the calls are parsed from the
		// sampled text (internal/play.ParseToolCalls). "none" asks for no server-side parsing: vLLM then
		// needs neither --enable-auto-tool-choice nor --tool-call-parser (an omitted tool_choice means
		// "auto" there, a 400 without them) and still renders the tools (unless served with
		// --exclude-tools-when-tool-choice-none). SGLang leaves the tools out under "none", so a role
		// served by SGLang, or llm.tool_choice omit (Settings.OmitToolChoice), sends none.
		body.ToolChoice = "none"
	}
	if !rs.Plain { // a hosted API takes no template variables
		body.ChatTemplateKwargs = rs.ChatTemplateKwargs
		if req.ChatTemplateKwargs != nil {
			body.ChatTemplateKwargs = req.ChatTemplateKwargs
		}
	}
	raw, err := json.Marshal(&body)
	if err != nil {
		return nil, "", fmt.Errorf("llm: encode %s request %s: %w", req.Role, req.Key, err)
	}
	sum := sha256.Sum256(raw)
	return raw, hex.EncodeToString(sum[:]), nil
}

// encodeCompletion encodes a token-in-token-out call (CompletionRequestBody): always with vLLM's
// sampling fields, log-probs and token ids, since the call exists to be trained on.
func (c *Client) encodeCompletion(req *Request, rs RoleSettings) ([]byte, string, error) {
	if len(req.Messages) > 0 || len(req.Tools) > 0 {
		return nil, "", fmt.Errorf("llm: %s request %s: a token-id prompt takes no messages or tools", req.Role, req.Key)
	}
	if rs.Plain {
		return nil, "", fmt.Errorf("llm: %s request %s: a token-id prompt needs vLLM's /completions, not a plain (portable) role", req.Role, req.Key)
	}
	if c.Server(req.Role) == ServerSGLang {
		return encodeBody(&GenerateRequestBody{InputIDs: req.PromptIDs, ReturnLogprob: true, SamplingParams: SamplingParams{
			MaxNewTokens: req.maxTokens(rs.MaxTokens), Temperature: &rs.Temperature, TopP: &rs.TopP, TopK: max(rs.TopK, 0),
			SamplingSeed: RequestSeed(c.settings.Seed, req.Role, req.Step, req.Key)}}, req)
	}
	yes, zero := true, 0
	body := CompletionRequestBody{
		Model: rs.Model, Prompt: req.PromptIDs, MaxTokens: req.maxTokens(rs.MaxTokens),
		Temperature: &rs.Temperature, TopP: &rs.TopP, TopK: max(rs.TopK, 0),
		Seed:     RequestSeed(c.settings.Seed, req.Role, req.Step, req.Key),
		Logprobs: &zero, ReturnTokenIDs: &yes,
	}
	return encodeBody(&body, req)
}

// encodeBody marshals a request body and hashes it.
func encodeBody(body any, req *Request) ([]byte, string, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, "", fmt.Errorf("llm: encode %s request %s: %w", req.Role, req.Key, err)
	}
	sum := sha256.Sum256(raw)
	return raw, hex.EncodeToString(sum[:]), nil
}

// Chat makes one call, waiting for a free in-flight slot, and records it. A failed call (see the package
// comment) returns a Completion with Err set and a nil error; the error is non-nil only when the context
// ended or a replay missed, and then nothing is recorded. With req.PromptIDs set the call goes to
// /completions; its Outcome's PromptTokenIDs are the ids sent when the server returned none.
func (c *Client) Chat(ctx context.Context, req Request) (*Completion, error) {
	body, hash, err := c.EncodeRequest(&req)
	if err != nil {
		return nil, err
	}
	kind := kindChat
	if req.PromptIDs != nil {
		kind = kindCompletion
		if c.Server(req.Role) == ServerSGLang {
			kind = kindGenerate
		}
	}
	return c.do(ctx, kind, &req, body, hash)
}

// Tokenize tokenizes req.Text with the role's server (vLLM's POST /tokenize) and records the call; the
// tokens are the Completion's PromptTokenIDs. Errors are as for Chat.
func (c *Client) Tokenize(ctx context.Context, treq TokenizeRequest) (*Completion, error) {
	rs, ok := c.settings.Roles[treq.Role]
	if !ok {
		return nil, fmt.Errorf("llm: role %s is not configured", treq.Role)
	}
	req := Request{Role: treq.Role, Step: treq.Step, Key: treq.Key}
	body, hash, err := encodeBody(&TokenizeRequestBody{Model: rs.Model, Prompt: treq.Text}, &req)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, kindTokenize, &req, body, hash)
}

// TokenizeChat has the role's server render its chat template over req.Messages and tokenize the result
// (vLLM's POST /tokenize with messages), and records the call like Tokenize; the tokens are the
// Completion's PromptTokenIDs.
func (c *Client) TokenizeChat(ctx context.Context, treq TokenizeChatRequest) (*Completion, error) {
	rs, ok := c.settings.Roles[treq.Role]
	if !ok {
		return nil, fmt.Errorf("llm: role %s is not configured", treq.Role)
	}
	req := Request{Role: treq.Role, Step: treq.Step, Key: treq.Key}
	kwargs := rs.ChatTemplateKwargs
	if treq.ChatTemplateKwargs != nil {
		kwargs = treq.ChatTemplateKwargs
	}
	body, hash, err := encodeBody(&TokenizeChatRequestBody{Model: rs.Model, Messages: treq.Messages, Tools: treq.Tools,
		AddGenerationPrompt: treq.AddGenerationPrompt, ChatTemplateKwargs: kwargs}, &req)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, kindTokenize, &req, body, hash)
}

// do sends one encoded call through the role's backend and records it.
func (c *Client) do(ctx context.Context, kind callKind, req *Request, body []byte, hash string) (*Completion, error) {
	b := c.backends[req.Role]
	if c.inFlight != nil {
		select {
		case c.inFlight <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c.calling.Add(1)
	out, err := b.complete(ctx, kind, req, body, hash)
	c.calling.Add(-1)
	if c.inFlight != nil {
		<-c.inFlight
	}
	if err != nil {
		return nil, err
	}
	if (kind == kindCompletion || kind == kindGenerate) && out.Err == "" && out.PromptTokenIDs == nil {
		out.PromptTokenIDs = append([]int64(nil), req.PromptIDs...)
	}
	if kind == kindTokenize && out.Model == "" && out.Err == "" {
		out.Model = c.settings.Roles[req.Role].Model
	}
	rs := c.settings.Roles[req.Role]
	call := Call{
		CallID:         CallID(req.Role, req.Step, req.Key),
		Role:           req.Role,
		Step:           req.Step,
		Key:            req.Key,
		RequestHash:    hash,
		RequestJSON:    string(body),
		MaxTokens:      req.maxTokens(rs.MaxTokens),
		Temperature:    rs.Temperature,
		TopP:           rs.TopP,
		Seed:           RequestSeed(c.settings.Seed, req.Role, req.Step, req.Key),
		WeightsVersion: rs.WeightsVersion,
		Outcome:        out,
	}
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
	return &Completion{CallID: call.CallID, Outcome: out}, nil
}

// TakeCall returns the recorded call with the given id and forgets it, leaving every other recorded call
// in place (for a caller that commits its own calls while others share the client); ok is false when no
// such call is recorded.
func (c *Client) TakeCall(callID string) (call Call, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.calls {
		if c.calls[i].CallID == callID {
			call = c.calls[i]
			c.calls = append(c.calls[:i], c.calls[i+1:]...)
			return call, true
		}
	}
	return Call{}, false
}

// TakeCalls returns the calls recorded since the last TakeCalls, sorted by call id, and forgets them.
// Calls made again under the same key (a retried episode) keep the order in which they were made.
func (c *Client) TakeCalls() []Call {
	c.mu.Lock()
	calls := c.calls
	c.calls = nil
	c.mu.Unlock()
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].CallID < calls[j].CallID })
	return calls
}
