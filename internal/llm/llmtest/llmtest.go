// Package llmtest is the one stand-in of the test suite: an OpenAI-protocol HTTP server that answers
// Chat Completions from a script, in vLLM's response shape (logprobs.content[], prompt_token_ids,
// choices[].token_ids, tool calls), plus GET /v1/models, POST /v1/embeddings, POST /v1/completions with a
// token-id prompt and vLLM's POST /tokenize (see handleCompletions). Tokens come from a
// deterministic toy tokenizer (Tokenize), so token ids and logprobs are stable across runs.
package llmtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/llm"
)

// Reply is what the script answers to one request.
type Reply struct {
	// Text is the assistant content.
	Text string
	// ToolCalls are the assistant's tool calls (arguments may be invalid JSON on purpose).
	ToolCalls []llm.ToolCall
	// FinishReason overrides the default (stop, or tool_calls when ToolCalls is set).
	FinishReason string
	// Status, when not 0 or 200, answers with this HTTP status and an OpenAI error body.
	Status int
	// RetryAfter, when set, is sent as the Retry-After header of a Status answer.
	RetryAfter string
	// Delay is slept before answering (the request's context cuts it short).
	Delay time.Duration
	// Raw, when set, is sent verbatim as the 200 body (e.g. invalid UTF-8).
	Raw []byte
	// Plain omits logprobs and token ids, like a server without vLLM's extensions.
	Plain bool
}

// Script answers one decoded request; it may be called concurrently.
type Script func(req *llm.ChatRequestBody) Reply

// Server is a running scripted server; URL is its /v1 root.
type Server struct {
	// URL is the OpenAI base URL, ending in /v1.
	URL string

	srv    *httptest.Server
	script Script
	models []string
	// owner is the owned_by of the listed models ("llmtest" when empty).
	owner string

	mu       sync.Mutex
	keep     bool
	requests []llm.ChatRequestBody
	count    int
	// seqs maps a token sequence the server produced (a prompt followed by its completion) to the
	// conversation it stands for, ending with the assistant's message; texts maps a /tokenize answer
	// to its text. Both are kept with the requests, so a /completions prompt can be read back.
	seqs  map[string][]llm.Message
	texts map[string]string
	// convs maps a conversation's /tokenize ids (rendered with the generation prompt) to it.
	convs map[string][]llm.Message
	// completions are the /completions requests received, in arrival order.
	completions []llm.CompletionRequestBody
}

// Start starts a server answering with script and serving the given model names; it stops at the end of
// the test. Requests are kept for inspection (see Requests) unless KeepRequests(false) is called.
func Start(t testing.TB, script Script, models ...string) *Server {
	t.Helper()
	s := NewServer(script, models...)
	t.Cleanup(s.Close)
	return s
}

// NewServer is Start without a test: the caller must Close it.
func NewServer(script Script, models ...string) *Server {
	s := &Server{script: script, models: models, keep: true, seqs: map[string][]llm.Message{}, texts: map[string]string{}, convs: map[string][]llm.Message{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", s.handleCompletions)
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Config.MaxHeaderBytes = 1 << 20
	s.srv.Start()
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close stops the server.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// KeepRequests turns keeping decoded requests on or off (off for benchmarks).
func (s *Server) KeepRequests(keep bool) {
	s.mu.Lock()
	s.keep = keep
	s.mu.Unlock()
}

// Requests returns the chat requests received so far, in arrival order.
func (s *Server) Requests() []llm.ChatRequestBody {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.ChatRequestBody(nil), s.requests...)
}

// Count returns the number of chat requests received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, m := range s.models {
		owner := s.owner
		if owner == "" {
			owner = "llmtest"
		}
		list.Data = append(list.Data, model{ID: m, Object: "model", OwnedBy: owner})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req llm.ChatRequestBody
	if err := json.Unmarshal(raw, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON: "+err.Error())
		return
	}
	s.mu.Lock()
	s.count++
	if s.keep {
		s.requests = append(s.requests, req)
	}
	s.mu.Unlock()
	if !s.serves(req.Model) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	reply := s.script(&req)
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		writeError(w, reply.Status, fmt.Sprintf("scripted status %d", reply.Status))
		return
	}
	if reply.Raw != nil {
		w.Header().Set("Content-Type", "application/json")
		w.Write(reply.Raw)
		return
	}
	resp := Response(&req, reply)
	if s.keepsRequests() && !reply.Plain && len(resp.Choices[0].Message.ToolCalls) == 0 {
		s.remember(append(resp.PromptTokenIDs, resp.Choices[0].TokenIDs...), append(append([]llm.Message(nil), req.Messages...),
			llm.Message{Role: "assistant", Content: reply.Text}))
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) keepsRequests() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keep
}

func (s *Server) remember(ids []int64, conv []llm.Message) {
	s.mu.Lock()
	s.seqs[idsKey(ids)] = conv
	s.mu.Unlock()
}

func idsKey(ids []int64) string { return fmt.Sprint(ids) }

// TokenIOTemplate is the toy chat template's text between a completion and the next one, for
// rollout.token_io_template: the user header, the observation, the end of the message and the
// generation prompt. (A completion already ends with EndOfMessage.)
const TokenIOTemplate = "<|user|>{observation}<|end|><|assistant|>"

// TokenizeText is the toy tokenizer as /tokenize applies it: Tokenize of the text, with each literal
// "<|end|>" read as the special token EndOfMessage.
func TokenizeText(text string) []int64 {
	parts := strings.Split(text, "<|end|>")
	var ids []int64
	for i, p := range parts {
		if i > 0 {
			ids = append(ids, EndOfMessage)
		}
		ids = append(ids, Tokenize(p)...)
	}
	if ids == nil {
		ids = []int64{}
	}
	return ids
}

// handleTokenize serves vLLM's POST /tokenize (at the server root): {"model", "prompt"} → {"count",
// "max_model_len", "tokens"} with TokenizeText, or {"model", "messages", "add_generation_prompt"} with
// TokenizePrompt (the generation prompt only when asked). A conversation rendered with the generation
// prompt is remembered, so a /completions prompt that spells it is read back as that conversation.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		llm.TokenizeRequestBody
		Messages            []llm.Message     `json:"messages"`
		Tools               []json.RawMessage `json:"tools"`
		AddGenerationPrompt bool              `json:"add_generation_prompt"`
	}
	if !readRequest(w, r, &req, s.models, &req.Model) {
		return
	}
	if req.Messages != nil {
		ids := TokenizePrompt(&llm.ChatRequestBody{Messages: req.Messages, Tools: req.Tools})
		if !req.AddGenerationPrompt {
			ids = ids[:len(ids)-len(Tokenize("<|assistant|>"))]
		} else { // kept whatever KeepRequests says: the /completions calls that follow need it
			s.mu.Lock()
			s.convs[idsKey(ids)] = append([]llm.Message(nil), req.Messages...)
			s.mu.Unlock()
		}
		writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": 1 << 20, "tokens": ids})
		return
	}
	ids := TokenizeText(req.Prompt)
	s.mu.Lock()
	if s.keep {
		s.texts[idsKey(ids)] = req.Prompt
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": 1 << 20, "tokens": ids})
}

// Completions returns the /completions requests received so far, in arrival order.
func (s *Server) Completions() []llm.CompletionRequestBody {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.CompletionRequestBody(nil), s.completions...)
}

// handleCompletions serves POST /v1/completions with a token-id prompt, as a token-in-token-out rollout
// sends it: the prompt must be a sequence this server produced (an earlier prompt and its completion)
// followed by the tokens of one /tokenize call, whose text is TokenIOTemplate around an observation.
// The script is asked with the conversation that stands for: the earlier one plus a user message holding
// the observation (the template's markers cut off), so one script answers both endpoints. The answer is
// in vLLM's completions shape (text, logprobs.token_logprobs, choices[].prompt_token_ids, token_ids);
// its prompt ids are the ids sent, and the completion ends with EndOfMessage like a chat one.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req llm.CompletionRequestBody
	if !readRequest(w, r, &req, s.models, &req.Model) {
		return
	}
	s.mu.Lock()
	conv, found := s.convs[idsKey(req.Prompt)]
	for n := len(req.Prompt); n > 0 && !found; n-- {
		prev, ok := s.seqs[idsKey(req.Prompt[:n])]
		if !ok {
			continue
		}
		if text, ok := s.texts[idsKey(req.Prompt[n:])]; ok {
			obs := strings.TrimSuffix(strings.TrimPrefix(text, "<|user|>"), "<|end|><|assistant|>")
			conv, found = append(append([]llm.Message(nil), prev...), llm.Message{Role: "user", Content: obs}), true
		}
	}
	s.count++
	s.completions = append(s.completions, req)
	s.mu.Unlock()
	if !found {
		writeError(w, http.StatusBadRequest, "llmtest: the prompt ids are not an earlier prompt and completion followed by one /tokenize answer")
		return
	}
	chat := llm.ChatRequestBody{Model: req.Model, Messages: conv, MaxTokens: req.MaxTokens, Temperature: req.Temperature,
		TopP: req.TopP, TopK: req.TopK, Seed: req.Seed}
	s.mu.Lock()
	s.requests = append(s.requests, chat)
	s.mu.Unlock()
	reply := s.script(&chat)
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		writeError(w, reply.Status, fmt.Sprintf("scripted status %d", reply.Status))
		return
	}
	reply = cutAtMaxTokens(reply, req.MaxTokens)
	chunks := append(chunk(reply.Text), endOfMessage)
	if reply.FinishReason == "length" {
		chunks = chunks[:len(chunks)-1] // cut short: no end-of-turn token
	}
	ids := make([]int64, len(chunks))
	lps := make([]float64, len(chunks))
	for i, c := range chunks {
		ids[i], lps[i] = chunkID(c), TokenLogprob(chunkID(c))
	}
	finish := reply.FinishReason
	if finish == "" {
		finish = "stop"
	}
	s.remember(append(append([]int64(nil), req.Prompt...), ids...), append(conv, llm.Message{Role: "assistant", Content: reply.Text}))
	writeJSON(w, http.StatusOK, &llm.CompletionResponseBody{
		ID: "cmpl-llmtest", Object: "text_completion", Model: req.Model,
		Choices: []llm.CompletionChoice{{Text: reply.Text, FinishReason: finish, PromptTokenIDs: req.Prompt, TokenIDs: ids,
			Logprobs: &llm.CompletionLogprob{Tokens: chunks, TokenLogprobs: lps}}},
		Usage: &llm.Usage{PromptTokens: int64(len(req.Prompt)), CompletionTokens: int64(len(ids)), TotalTokens: int64(len(req.Prompt) + len(ids))},
	})
}

func (s *Server) serves(model string) bool { return slices.Contains(s.models, model) }

// readRequest decodes r's JSON body into v and, when model is not nil, checks that it names one of
// models (read after decoding); on a failure it answers as vLLM does (400 or 404) and returns false.
func readRequest(w http.ResponseWriter, r *http.Request, v any, models []string, model *string) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON: "+err.Error())
		return false
	}
	if model != nil && !slices.Contains(models, *model) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", *model))
		return false
	}
	return true
}

// Response builds the vLLM-shaped body for a reply: token ids of the prompt (TokenizePrompt) and of the
// completion (Tokenize of its text and tool calls, then EndOfMessage), one logprobs.content entry per
// completion token, usage counts. Like a real chat template that keeps the history verbatim, the next
// turn's prompt begins with this prompt and this completion.
func Response(req *llm.ChatRequestBody, reply Reply) *llm.ChatResponseBody {
	promptIDs := TokenizePrompt(req)
	reply = cutAtMaxTokens(reply, max(req.MaxTokens, req.MaxCompletionTokens))
	completion := reply.Text
	for _, tc := range reply.ToolCalls {
		completion += tc.Function.Name + tc.Function.Arguments
	}
	chunks := append(chunk(completion), endOfMessage)
	if reply.FinishReason == "length" {
		chunks = chunks[:len(chunks)-1] // cut short: no end-of-turn token
	}
	finish := reply.FinishReason
	if finish == "" {
		finish = "stop"
		if len(reply.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	choice := llm.ChatChoice{
		Message:      llm.ResponseMessage{Role: "assistant", ToolCalls: reply.ToolCalls},
		FinishReason: finish,
	}
	if reply.Text != "" || len(reply.ToolCalls) == 0 {
		text := reply.Text
		choice.Message.Content = &text
	}
	body := &llm.ChatResponseBody{
		ID:      "chatcmpl-llmtest",
		Object:  "chat.completion",
		Model:   req.Model,
		Choices: []llm.ChatChoice{choice},
		Usage: &llm.Usage{
			PromptTokens:     int64(len(promptIDs)),
			CompletionTokens: int64(len(chunks)),
			TotalTokens:      int64(len(promptIDs) + len(chunks)),
		},
	}
	if !reply.Plain {
		body.PromptTokenIDs = promptIDs
		ids := make([]int64, len(chunks))
		content := make([]llm.TokenLogprob, len(chunks))
		for i, c := range chunks {
			ids[i] = chunkID(c)
			content[i] = llm.TokenLogprob{Token: c, Logprob: TokenLogprob(ids[i]), TopLogprobs: []llm.TokenLogprob{}}
		}
		body.Choices[0].TokenIDs = ids
		body.Choices[0].Logprobs = &llm.ChoiceLogprobs{Content: content}
	}
	return body
}

// PromptText is the text the toy tokenizer reads for a request's prompt: each message as
// "<|role|>content", tool calls and tools appended.
func PromptText(req *llm.ChatRequestBody) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString("<|")
		b.WriteString(m.Role)
		b.WriteString("|>")
		b.WriteString(m.Content)
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Function.Name)
			b.WriteString(tc.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		b.Write(t)
	}
	return b.String()
}

// Vocab is the toy tokenizer's vocabulary size (Qwen3's).
const Vocab = 151936

// EndOfMessage is the toy chat template's end-of-message token id, the vocabulary's last id; every
// completion ends with it, like a real one's end-of-turn token.
const EndOfMessage = Vocab - 1

// endOfMessage is the chunk that stands for EndOfMessage.
const endOfMessage = "\x00<|end|>"

func chunkID(c string) int64 {
	if c == endOfMessage {
		return EndOfMessage
	}
	return tokenID(c)
}

// TokenizePrompt tokenizes a request's prompt the way a chat template renders it: each message on its
// own, "<|role|>" then its content (and tool calls) then EndOfMessage, the tools, and last the
// generation prompt "<|assistant|>". Because every message is tokenized apart, an assistant message
// in a later request gives exactly the completion tokens it was sampled as.
func TokenizePrompt(req *llm.ChatRequestBody) []int64 {
	var ids []int64
	for _, m := range req.Messages {
		ids = append(ids, Tokenize("<|"+m.Role+"|>")...)
		text := m.Content
		for _, tc := range m.ToolCalls {
			text += tc.Function.Name + tc.Function.Arguments
		}
		ids = append(ids, Tokenize(text)...)
		ids = append(ids, EndOfMessage)
	}
	for _, t := range req.Tools {
		ids = append(ids, Tokenize(string(t))...)
	}
	return append(ids, Tokenize("<|assistant|>")...)
}

// Tokenize splits text into chunks of at most four bytes, cut at rune boundaries, and maps each chunk to
// FNV-1a(chunk) mod Vocab.
func Tokenize(text string) []int64 {
	chunks := chunk(text)
	ids := make([]int64, len(chunks))
	for i, c := range chunks {
		ids[i] = tokenID(c)
	}
	return ids
}

// TokenLogprob is the toy logprob of a token id: −(1 + id mod 1000)/1000, in [−1, −0.001].
func TokenLogprob(id int64) float64 {
	return -float64(1+id%1000) / 1000
}

func chunk(text string) []string {
	out := make([]string, 0, len(text)/4+1)
	for len(text) > 0 {
		n := min(4, len(text))
		for n > 1 && n < len(text) && !isRuneStart(text[n]) {
			n--
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// cutAtMaxTokens does what a real server does to an answer longer than the request's max_tokens (> 0):
// it keeps the first max_tokens tokens of the text and tool calls, as text, with no end-of-turn token and
// finish_reason length.
func cutAtMaxTokens(reply Reply, maxTokens int) Reply {
	completion := reply.Text
	for _, tc := range reply.ToolCalls {
		completion += tc.Function.Name + tc.Function.Arguments
	}
	chunks := chunk(completion)
	if maxTokens <= 0 || len(chunks)+1 <= maxTokens {
		return reply
	}
	reply.Text, reply.ToolCalls, reply.FinishReason = strings.Join(chunks[:maxTokens], ""), nil, "length"
	return reply
}

func tokenID(c string) int64 {
	h := fnv.New32a()
	h.Write([]byte(c))
	return int64(h.Sum32() % Vocab)
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if !readRequest(w, r, &req, s.models, &req.Model) {
		return
	}
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	resp := struct {
		Object string  `json:"object"`
		Model  string  `json:"model"`
		Data   []datum `json:"data"`
	}{Object: "list", Model: req.Model}
	for i, text := range req.Input {
		resp.Data = append(resp.Data, datum{Object: "embedding", Index: i, Embedding: Embedding(text)})
	}
	writeJSON(w, http.StatusOK, resp)
}

// EmbeddingDim is the length of the toy embeddings.
const EmbeddingDim = 16

// Embedding is the toy embedding of a text: bag of token ids hashed into EmbeddingDim buckets, L2
// normalised (all zeros for empty text). Equal texts embed equally; texts sharing tokens are close.
func Embedding(text string) []float64 {
	v := make([]float64, EmbeddingDim)
	for _, id := range Tokenize(text) {
		v[id%EmbeddingDim]++
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for i := range v {
			v[i] /= norm
		}
	}
	return v
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(raw)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "scripted", "code": status}})
}
