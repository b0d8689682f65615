package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

const model = "qwen3-test"

func settings(url string) llm.Settings {
	return llm.Settings{
		Roles: map[schemas.Role]llm.RoleSettings{
			schemas.RoleAgent:    {BaseURL: url, Model: model, MaxTokens: 64, Temperature: 1, TopP: 1},
			schemas.RoleDesigner: {BaseURL: url, Model: model, MaxTokens: 128, Temperature: 1, TopP: 0.95, WeightsVersion: "lora-3"},
		},
		MaxInFlight: 8,
		Timeout:     2 * time.Second,
		MaxRetries:  3,
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		Seed:        7,
	}
}

func newClient(t *testing.T, s llm.Settings) *llm.Client {
	t.Helper()
	c, err := llm.New(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func echo(req *llm.ChatRequestBody) llmtest.Reply {
	return llmtest.Reply{Text: "<action>" + req.Messages[len(req.Messages)-1].Content + "</action>"}
}

func ask(role schemas.Role, key, text string) llm.Request {
	return llm.Request{Role: role, Step: 3, Key: key, Messages: []llm.Message{{Role: "system", Content: "play"}, {Role: "user", Content: text}}}
}

func TestChatStoresTokensAndLogprobs(t *testing.T) {
	srv := llmtest.Start(t, echo, model)
	c := newClient(t, settings(srv.URL))
	if err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	comp, err := c.Chat(context.Background(), ask(schemas.RoleAgent, "ep=0/turn=0", "left"))
	if err != nil {
		t.Fatal(err)
	}
	if comp.Failed() || comp.Text != "<action>left</action>" {
		t.Fatalf("completion = %+v", comp)
	}
	want := append(llmtest.Tokenize("<action>left</action>"), llmtest.EndOfMessage)
	if len(comp.CompletionTokenIDs) != len(want) || len(comp.CompletionLogprobs) != len(want) {
		t.Fatalf("token ids %v logprobs %v, want %d tokens", comp.CompletionTokenIDs, comp.CompletionLogprobs, len(want))
	}
	for i, id := range want {
		if comp.CompletionTokenIDs[i] != id || comp.CompletionLogprobs[i] != llmtest.TokenLogprob(id) {
			t.Fatalf("token %d: id %d lp %v, want %d %v", i, comp.CompletionTokenIDs[i], comp.CompletionLogprobs[i], id, llmtest.TokenLogprob(id))
		}
	}
	if len(comp.PromptTokenIDs) == 0 || comp.PromptTokens != int64(len(comp.PromptTokenIDs)) {
		t.Fatalf("prompt ids %d, usage %d", len(comp.PromptTokenIDs), comp.PromptTokens)
	}
	calls := c.TakeCalls()
	if len(calls) != 1 {
		t.Fatalf("recorded %d calls", len(calls))
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(calls[0].RequestJSON), &body); err != nil {
		t.Fatal(err)
	}
	if body["logprobs"] != true || body["top_logprobs"] != float64(0) || body["return_token_ids"] != true {
		t.Fatalf("request does not ask for logprobs and token ids: %s", calls[0].RequestJSON)
	}
	if body["max_tokens"] != float64(64) || body["model"] != model {
		t.Fatalf("request sampling params wrong: %s", calls[0].RequestJSON)
	}
	row := calls[0].Row()
	if err := row.Validate(); err != nil {
		t.Fatal(err)
	}
	if row.CallID != llm.CallID(schemas.RoleAgent, 3, "ep=0/turn=0") || row.Step != 3 || row.Role != "agent" || row.WeightsVersion != model {
		t.Fatalf("row identity wrong: %+v", row)
	}
	if len(c.TakeCalls()) != 0 {
		t.Fatal("TakeCalls did not forget")
	}
}

func TestPlainServerLeavesTokenColumnsNull(t *testing.T) {
	srv := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "hi", Plain: true} }, model)
	c := newClient(t, settings(srv.URL))
	comp, err := c.Chat(context.Background(), ask(schemas.RoleDesigner, "slot=0", "design"))
	if err != nil || comp.Failed() {
		t.Fatalf("err %v completion %+v", err, comp)
	}
	row := c.TakeCalls()[0].Row()
	if row.PromptTokenIDs != nil || row.CompletionTokenIDs != nil || row.CompletionLogprobs != nil {
		t.Fatalf("token columns not null: %+v", row)
	}
	if row.WeightsVersion != "lora-3" {
		t.Fatalf("weights version %q", row.WeightsVersion)
	}
}

func TestToolCallsWithInvalidArgumentsPassThrough(t *testing.T) {
	calls := []llm.ToolCall{{ID: "c1", Type: "function", Function: llm.FunctionCall{Name: "lookup", Arguments: `{"id": 3`}}}
	srv := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{ToolCalls: calls} }, model)
	c := newClient(t, settings(srv.URL))
	req := ask(schemas.RoleAgent, "k", "go")
	req.Tools = []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}`)}
	comp, err := c.Chat(context.Background(), req)
	if err != nil || comp.Failed() {
		t.Fatalf("err %v completion %+v", err, comp)
	}
	if len(comp.ToolCalls) != 1 || comp.ToolCalls[0].Function.Arguments != `{"id": 3` || comp.FinishReason != "tool_calls" {
		t.Fatalf("tool calls %+v finish %q", comp.ToolCalls, comp.FinishReason)
	}
	got := srv.Requests()[0]
	if len(got.Tools) != 1 || got.ToolChoice != "none" {
		t.Fatalf("tools not sent: %+v", got)
	}
	row := c.TakeCalls()[0].Row()
	if !strings.Contains(row.ToolCalls, `"lookup"`) {
		t.Fatalf("tool calls column %q", row.ToolCalls)
	}
}

func TestRetriesTransientErrorsThenSucceeds(t *testing.T) {
	var n atomic.Int64
	srv := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		switch n.Add(1) {
		case 1:
			return llmtest.Reply{Status: 429}
		case 2:
			return llmtest.Reply{Status: 503}
		}
		return echo(req)
	}, model)
	c := newClient(t, settings(srv.URL))
	comp, err := c.Chat(context.Background(), ask(schemas.RoleAgent, "k", "x"))
	if err != nil || comp.Failed() {
		t.Fatalf("err %v completion %+v", err, comp)
	}
	if comp.Attempts != 3 {
		t.Fatalf("attempts = %d, want 3", comp.Attempts)
	}
}

// Bad input: the server answers 500 for longer than the retry budget; the call fails with its reason
// and the next call still works.
func TestPersistent500IsRecordedFailure(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	srv := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		if failing.Load() {
			return llmtest.Reply{Status: 500}
		}
		return echo(req)
	}, model)
	c := newClient(t, settings(srv.URL))
	comp, err := c.Chat(context.Background(), ask(schemas.RoleAgent, "a", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if !comp.Failed() || !strings.Contains(comp.Err, "HTTP 500") || !strings.Contains(comp.Err, "4 attempts") {
		t.Fatalf("err = %q", comp.Err)
	}
	if srv.Count() != 4 {
		t.Fatalf("server saw %d requests, want 1 + 3 retries", srv.Count())
	}
	failing.Store(false)
	comp, err = c.Chat(context.Background(), ask(schemas.RoleAgent, "b", "x"))
	if err != nil || comp.Failed() {
		t.Fatalf("after recovery: err %v completion %+v", err, comp)
	}
	rows := llm.Rows(c.TakeCalls())
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	var failed int
	for _, r := range rows {
		if r.Error != "" {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d failed rows, want 1", failed)
	}
}

func TestNonRetryable4xxFailsAtOnce(t *testing.T) {
	srv := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Status: 400} }, model)
	c := newClient(t, settings(srv.URL))
	comp, _ := c.Chat(context.Background(), ask(schemas.RoleAgent, "a", "x"))
	if !strings.Contains(comp.Err, "HTTP 400") || comp.Attempts != 1 {
		t.Fatalf("completion %+v", comp)
	}
}

// Bad input: a server slower than the timeout.
func TestSlowServerTimesOut(t *testing.T) {
	srv := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "late", Delay: time.Second} }, model)
	s := settings(srv.URL)
	s.Timeout = 50 * time.Millisecond
	c := newClient(t, s)
	comp, err := c.Chat(context.Background(), ask(schemas.RoleAgent, "a", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comp.Err, "timeout") {
		t.Fatalf("err = %q", comp.Err)
	}
}

// Bad input: invalid UTF-8 and a 10 MB answer.
func TestInvalidUTF8AndHugeResponsesFail(t *testing.T) {
	huge := strings.Repeat("x", 10<<20)
	srv := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		switch req.Messages[1].Content {
		case "utf8":
			return llmtest.Reply{Raw: []byte("{\"model\":\"m\",\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"bad \xff\xfe\"},\"finish_reason\":\"stop\"}]}")}
		case "huge": // a body past the client's limit (sent raw: the stand-in, like a server, cuts answers at max_tokens)
			return llmtest.Reply{Raw: []byte(`{"model":"m","choices":[{"message":{"role":"assistant","content":"` + huge + `"},"finish_reason":"stop"}]}`)}
		case "empty":
			return llmtest.Reply{Raw: []byte(`{"model":"m","choices":[]}`)}
		}
		return llmtest.Reply{Raw: []byte(`{"choices": [`)}
	}, model)
	s := settings(srv.URL)
	s.Timeout = 20 * time.Second
	c := newClient(t, s)
	for input, want := range map[string]string{
		"utf8":  "not valid UTF-8",
		"huge":  "larger than",
		"empty": "no choices",
		"cut":   "decode response",
	} {
		comp, err := c.Chat(context.Background(), ask(schemas.RoleAgent, input, input))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(comp.Err, want) || comp.Attempts != 1 {
			t.Errorf("%s: err %q attempts %d, want %q once", input, comp.Err, comp.Attempts, want)
		}
	}
	for _, call := range c.TakeCalls() {
		if err := call.Row().Validate(); err != nil {
			t.Errorf("failed call row invalid: %v", err)
		}
	}
}

func TestCheckFailsFastOnBadEndpoint(t *testing.T) {
	srv := llmtest.Start(t, echo, "other-model")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	cases := map[string]struct {
		url, want string
	}{
		"unknown model": {srv.URL, `model "qwen3-test" is not served`},
		"unreachable":   {dead, "unreachable"},
		"missing":       {"", "no base URL"},
		"not a URL":     {"localhost:8000", "neither http"},
		"wrong path":    {strings.TrimSuffix(srv.URL, "/v1"), "HTTP 404"},
	}
	for name, tc := range cases {
		c := newClient(t, settings(tc.url))
		err := c.Check(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "agent") && !strings.Contains(err.Error(), "designer") {
			t.Errorf("%s: err = %v, want %q naming the role", name, err, tc.want)
		}
	}
}

func TestInFlightIsBounded(t *testing.T) {
	var cur, peak atomic.Int64
	srv := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		cur.Add(-1)
		return echo(req)
	}, model)
	s := settings(srv.URL)
	s.MaxInFlight = 4
	c := newClient(t, s)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if _, err := c.Chat(context.Background(), ask(schemas.RoleAgent, string(rune('a'+i)), "x")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 4 || p < 2 {
		t.Fatalf("peak in flight = %d, want 2..4", p)
	}
}

func TestReplayAnswersFromRowsAndMissesNameTheCall(t *testing.T) {
	srv := llmtest.Start(t, echo, model)
	rec := newClient(t, settings(srv.URL))
	for _, k := range []string{"a", "b"} {
		if _, err := rec.Chat(context.Background(), ask(schemas.RoleAgent, k, "move "+k)); err != nil {
			t.Fatal(err)
		}
	}
	rows := llm.Rows(rec.TakeCalls())
	load := func(_ context.Context, run string) ([]llm.Call, error) {
		if run != "r1" {
			return nil, errors.New("no such run")
		}
		var calls []llm.Call
		for i := range rows {
			c, err := llm.CallFromRow(&rows[i])
			if err != nil {
				return nil, err
			}
			calls = append(calls, c)
		}
		return calls, nil
	}
	s := settings("replay:r1")
	rep, err := llm.New(context.Background(), s, load)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(context.Background(), schemas.RoleAgent); err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(context.Background(), schemas.RoleDesigner); err == nil || !strings.Contains(err.Error(), "no recorded designer calls") {
		t.Fatalf("designer check: %v", err)
	}
	for _, k := range []string{"b", "a"} {
		if _, err := rep.Chat(context.Background(), ask(schemas.RoleAgent, k, "move "+k)); err != nil {
			t.Fatal(err)
		}
	}
	again := llm.Rows(rep.TakeCalls())
	for i := range rows {
		a, _ := json.Marshal(rows[i])
		b, _ := json.Marshal(again[i])
		if string(a) != string(b) {
			t.Fatalf("replayed row differs:\n%s\n%s", a, b)
		}
	}
	_, err = rep.Chat(context.Background(), ask(schemas.RoleAgent, "a", "a different move"))
	var miss *llm.ReplayMissError
	if !errors.As(err, &miss) || miss.Step != 3 || miss.Role != schemas.RoleAgent || !strings.Contains(err.Error(), "a different move") {
		t.Fatalf("miss error = %v", err)
	}
	if _, err := llm.New(context.Background(), settings("replay:nope"), load); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown run: %v", err)
	}
}

func TestRequestSeedAndCallIDAreStableAndDistinct(t *testing.T) {
	if llm.RequestSeed(1, schemas.RoleAgent, 2, "k") != llm.RequestSeed(1, schemas.RoleAgent, 2, "k") {
		t.Fatal("seed not stable")
	}
	seen := map[int64]bool{}
	for _, k := range []string{"a", "b", "c"} {
		for _, seed := range []int64{0, 1} {
			s := llm.RequestSeed(seed, schemas.RoleAgent, 2, k)
			if s < 0 || seen[s] {
				t.Fatalf("seed %d repeated or negative", s)
			}
			seen[s] = true
		}
	}
	if id := llm.CallID(schemas.RoleAgent, 1, "k"); len(id) != 16 || id == llm.CallID(schemas.RoleDesigner, 1, "k") {
		t.Fatalf("call id %q", id)
	}
}

func TestRetryDelay(t *testing.T) {
	base, max := 100*time.Millisecond, time.Second
	cases := []struct {
		n    int
		u    float64
		want time.Duration
	}{
		{1, 1, 100 * time.Millisecond},
		{0, 1, 100 * time.Millisecond},
		{2, 1, 200 * time.Millisecond},
		{3, 0.5, 200 * time.Millisecond},
		{5, 1, time.Second},
		{200, 1, time.Second},
		{4, 0, 0},
	}
	for _, tc := range cases {
		if got := llm.RetryDelay(tc.n, base, max, tc.u); math.Abs(float64(got-tc.want)) > 1 {
			t.Errorf("RetryDelay(%d, u=%v) = %v, want %v", tc.n, tc.u, got, tc.want)
		}
	}
}

func TestEmbedder(t *testing.T) {
	srv := llmtest.Start(t, echo, "embed-model")
	e := &llm.Embedder{BaseURL: srv.URL, Model: "embed-model", BatchSize: 2}
	vecs, err := e.Embed(context.Background(), []string{"maze", "maze", "graph walk"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 3 || len(vecs[0]) != llmtest.EmbeddingDim {
		t.Fatalf("got %d vectors", len(vecs))
	}
	for i := range vecs[0] {
		if vecs[0][i] != vecs[1][i] {
			t.Fatal("equal texts embed differently")
		}
	}
	e.Model = "missing"
	if _, err := e.Embed(context.Background(), []string{"x"}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("missing model: %v", err)
	}
}

// A Plain role (a hosted frozen Designer) sends only portable fields.
func TestPlainRoleSendsPortableRequest(t *testing.T) {
	srv := llmtest.Start(t, echo, model)
	s := settings(srv.URL)
	rs := s.Roles[schemas.RoleDesigner]
	rs.Plain, rs.TopP = true, 1
	s.Roles[schemas.RoleDesigner] = rs
	c := newClient(t, s)
	if _, err := c.Chat(context.Background(), ask(schemas.RoleDesigner, "k", "design")); err != nil {
		t.Fatal(err)
	}
	body := c.TakeCalls()[0].RequestJSON
	for _, absent := range []string{"logprobs", "return_token_ids", `"max_tokens"`, "top_p"} {
		if strings.Contains(body, absent) {
			t.Errorf("plain request has %s: %s", absent, body)
		}
	}
	if !strings.Contains(body, `"max_completion_tokens":128`) {
		t.Errorf("plain request lacks max_completion_tokens: %s", body)
	}
}

// top_k goes into the body only when a role sets it (> 0) and is not Plain; 0 leaves the field out, so
// requests recorded without it still replay by request hash.
func TestTopKIsSentOnlyWhenSet(t *testing.T) {
	srv := llmtest.Start(t, echo, model)
	s := settings(srv.URL)
	unset := newClient(t, s)
	if _, err := unset.Chat(context.Background(), ask(schemas.RoleAgent, "k", "move")); err != nil {
		t.Fatal(err)
	}
	plainBody := unset.TakeCalls()[0].RequestJSON
	if strings.Contains(plainBody, "top_k") {
		t.Fatalf("top_k sent with top_k 0: %s", plainBody)
	}
	for _, role := range []schemas.Role{schemas.RoleAgent, schemas.RoleDesigner} {
		rs := s.Roles[role]
		rs.TopK = 20
		s.Roles[role] = rs
	}
	hosted := s.Roles[schemas.RoleDesigner]
	hosted.Plain = true
	withPlain := s
	withPlain.Roles = map[schemas.Role]llm.RoleSettings{schemas.RoleAgent: s.Roles[schemas.RoleAgent], schemas.RoleDesigner: hosted}
	set := newClient(t, s)
	for _, role := range []schemas.Role{schemas.RoleAgent, schemas.RoleDesigner} {
		if _, err := set.Chat(context.Background(), ask(role, "k", "move")); err != nil {
			t.Fatal(err)
		}
	}
	for _, call := range set.TakeCalls() {
		if !strings.Contains(call.RequestJSON, `"top_p":`) || !strings.Contains(call.RequestJSON, `"top_k":20`) {
			t.Fatalf("%s request without top_k 20: %s", call.Role, call.RequestJSON)
		}
	}
	if got := srv.Requests(); got[len(got)-1].TopK != 20 {
		t.Fatalf("the server decoded top_k %d", got[len(got)-1].TopK)
	}
	plain := newClient(t, withPlain)
	if _, err := plain.Chat(context.Background(), ask(schemas.RoleDesigner, "k", "design")); err != nil {
		t.Fatal(err)
	}
	if body := plain.TakeCalls()[0].RequestJSON; strings.Contains(body, "top_k") {
		t.Fatalf("a Plain role sent top_k: %s", body)
	}
}

// Concurrent writers of one step's llm_calls in one transaction, each writing its own fragment, lose no
// row, and a reader of the step sees them all once it commits.
func TestWriteCallsConcurrentWritersKeepEveryRow(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	tx := lk.Begin(lake.TxnSpec{Run: "r", Stage: "rollout", Step: 1})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			var calls []llm.Call
			for i := range 5 {
				key := fmt.Sprintf("w%d/%d", w, i)
				calls = append(calls, llm.Call{CallID: llm.CallID(schemas.RoleAgent, 1, key), Role: schemas.RoleAgent, Step: 1, RequestJSON: "{}", Outcome: llm.Outcome{Text: key}})
			}
			if err := llm.WriteCalls(ctx, tx, 1, fmt.Sprintf("w%d", w), calls, lake.WriteOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := lake.ReadStep[schemas.LLMCallRow](ctx, lk, "r", "llm_calls", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 20 {
		t.Fatalf("%d rows after 4 concurrent writers of 5, want 20", len(rows))
	}
}

// A token-id prompt goes to /v1/completions in vLLM's shape, the observation to /tokenize at the server
// root; both are recorded, and the completion's prompt ids are the ids sent.
func TestCompletionsWithTokenIDsAndTokenize(t *testing.T) {
	srv := llmtest.Start(t, echo, model)
	c := newClient(t, settings(srv.URL))
	ctx := context.Background()
	first, err := c.Chat(ctx, ask(schemas.RoleAgent, "ep=0/turn=0", "left"))
	if err != nil || first.Failed() {
		t.Fatalf("chat: %v %+v", err, first)
	}
	tok, err := c.Tokenize(ctx, llm.TokenizeRequest{Role: schemas.RoleAgent, Step: 3, Key: "ep=0/turn=1/observation",
		Text: strings.ReplaceAll(llmtest.TokenIOTemplate, "{observation}", "right")})
	if err != nil || tok.Failed() {
		t.Fatalf("tokenize: %v %+v", err, tok)
	}
	if want := llmtest.TokenizeText("<|user|>right<|end|><|assistant|>"); fmt.Sprint(tok.PromptTokenIDs) != fmt.Sprint(want) {
		t.Fatalf("tokens %v, want %v", tok.PromptTokenIDs, want)
	}
	prompt := append(append(append([]int64(nil), first.PromptTokenIDs...), first.CompletionTokenIDs...), tok.PromptTokenIDs...)
	comp, err := c.Chat(ctx, llm.Request{Role: schemas.RoleAgent, Step: 3, Key: "ep=0/turn=1", PromptIDs: prompt})
	if err != nil || comp.Failed() {
		t.Fatalf("completions: %v %+v", err, comp)
	}
	if comp.Text != "<action>right</action>" || fmt.Sprint(comp.PromptTokenIDs) != fmt.Sprint(prompt) ||
		len(comp.CompletionTokenIDs) == 0 || len(comp.CompletionLogprobs) != len(comp.CompletionTokenIDs) {
		t.Fatalf("completion %+v", comp.Outcome)
	}
	sent := srv.Completions()
	if len(sent) != 1 || sent[0].Logprobs == nil || *sent[0].Logprobs != 0 || sent[0].ReturnTokenIDs == nil || !*sent[0].ReturnTokenIDs {
		t.Fatalf("completions requests %+v", sent)
	}
	if calls := c.TakeCalls(); len(calls) != 3 {
		t.Fatalf("%d calls recorded, want chat, tokenize and completions", len(calls))
	}
	if _, err := c.Chat(ctx, llm.Request{Role: schemas.RoleAgent, Key: "x", PromptIDs: prompt, Messages: []llm.Message{{Role: "user"}}}); err == nil {
		t.Fatal("a token-id prompt with messages was sent")
	}
}

// The tools reach the server either way; tool_choice is "none" unless Settings.OmitToolChoice leaves it
// out (llm.tool_choice omit, for SGLang, which drops the tools from the template under "none").
func TestToolChoiceNoneOrOmitted(t *testing.T) {
	for _, omit := range []bool{false, true} {
		srv := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "ok"} }, model)
		s := settings(srv.URL)
		s.OmitToolChoice = omit
		c := newClient(t, s)
		req := ask(schemas.RoleAgent, "k", "go")
		req.Tools = []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}`)}
		if _, err := c.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		want := "none"
		if omit {
			want = ""
		}
		if got := srv.Requests()[0]; len(got.Tools) != 1 || got.ToolChoice != want {
			t.Fatalf("omit %v: %d tools, tool_choice %q", omit, len(got.Tools), got.ToolChoice)
		}
	}
}
