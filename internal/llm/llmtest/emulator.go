package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/chattemplate"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
)

// Emulator is a scripted server that tokenizes and renders like a real one: the model's own chat
// template (rendered over every request's whole history, so a template that re-renders the history
// does so here too) and its real BPE tokenizer (chattemplate.Helper), in vLLM's or SGLang's layout
// (EmulatorOptions.Layout). One completion in DriftEvery is served with a non-canonical split of its text
// (a merged token replaced by its two pieces: the same text, other ids), as real samplers sometimes
// produce.
//
// As vLLM it serves /v1/chat/completions (prompt_token_ids at the top level and choices[].token_ids
// under return_token_ids), /v1/completions with a token-id prompt (decoded back into the conversation the
// script is asked with), /tokenize (a prompt, or messages rendered through the template) and /v1/models
// (owned_by vllm). As SGLang it serves /v1/chat/completions (choices[].prompt_token_ids under
// return_prompt_token_ids, choices[].meta_info.output_token_logprobs under return_meta_info, and no ids
// otherwise), the native /generate with input_ids, /tokenize with a prompt only, and /v1/models
// (owned_by sglang).
type Emulator struct {
	// URL is the OpenAI base URL, ending in /v1.
	URL string

	srv    *httptest.Server
	tok    *chattemplate.Helper
	script Script
	models []string
	opts   EmulatorOptions

	mu       sync.Mutex
	served   []Served
	requests []llm.ChatRequestBody

	// The memory routes' state (EmulatorOptions.MemoryRoutes): whether the GPU memory is released, the
	// calls in flight, the weights loaded last (update_weights_from_disk's model_path), every memory or
	// publish request, the weights each sampling call was served by, and the calls that came while released.
	released      bool
	inFlight      int
	loaded        string
	memoryEvents  []MemoryEvent
	servedWeights []string
	whileReleased int
}

// MemoryEvent is one request to a memory or publish route: which, when, how many sampling calls were in
// flight then, and the weights it loaded (update_weights_from_disk).
type MemoryEvent struct {
	Route    string
	At       time.Time
	InFlight int
	Weights  string
}

// Served is one completion the emulator sampled: the exact prompt ids the model saw and the ids it
// returned.
type Served struct {
	Prompt, Completion []int64
	// Drifted reports a completion served with a non-canonical split.
	Drifted bool
}

// Layout is the server an Emulator answers as.
type Layout string

// The layouts.
const (
	LayoutVLLM   Layout = "vllm"
	LayoutSGLang Layout = "sglang"
)

// EmulatorOptions configure an Emulator.
type EmulatorOptions struct {
	// DriftEvery > 0 splits the completions whose request seed is a multiple of it.
	DriftEvery int64
	// Layout is vLLM's (the default) or SGLang's.
	Layout Layout
	// MemoryRoutes serves the routes that release and take back GPU memory, as a server started for them:
	// SGLang's POST /release_memory_occupation and /resume_memory_occupation ({"tags": [...]} or {}: all;
	// --enable-memory-saver), vLLM's POST /sleep?level=N, /wake_up[?tags=weights&tags=kv_cache] and GET
	// /is_sleeping (--enable-sleep-mode, VLLM_SERVER_DEV_MODE=1). While released every sampling call is
	// refused (503) and counted. Without it those routes answer 404.
	MemoryRoutes bool
}

// StartEmulator starts an emulator over tok answering with script (the script writes raw text: tool
// calls as <tool_call> blocks, think blocks as <think>…</think>). It stops at the end of the test.
func StartEmulator(t testing.TB, tok *chattemplate.Helper, script Script, opts EmulatorOptions, models ...string) *Emulator {
	t.Helper()
	if opts.Layout == "" {
		opts.Layout = LayoutVLLM
	}
	e := &Emulator{tok: tok, script: script, models: models, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", e.handleTokenize)
	mux.HandleFunc("GET /v1/models", (&Server{models: models, owner: string(opts.Layout)}).handleModels) // owned_by names the server
	// The publish endpoints exist (a GET is answered 405, as by the real servers); they load nothing.
	loaded := func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"success": true})
	}
	mux.HandleFunc("POST /v1/chat/completions", e.sampling(e.handleChat))
	if opts.Layout == LayoutSGLang {
		mux.HandleFunc("POST /generate", e.sampling(e.handleGenerate))
		mux.HandleFunc("POST /update_weights_from_disk", e.handleUpdateWeightsFromDisk)
		mux.HandleFunc("GET /get_server_info", func(w http.ResponseWriter, _ *http.Request) {
			// Part of SGLang's server_args: the memory routes free memory only with the memory saver.
			writeJSON(w, http.StatusOK, map[string]any{"enable_memory_saver": opts.MemoryRoutes, "tp_size": 1})
		})
		if opts.MemoryRoutes {
			mux.HandleFunc("POST /release_memory_occupation", e.handleSGLangMemory(true))
			mux.HandleFunc("POST /resume_memory_occupation", e.handleSGLangMemory(false))
		}
	} else {
		mux.HandleFunc("POST /v1/completions", e.sampling(e.handleCompletions))
		mux.HandleFunc("POST /v1/load_lora_adapter", loaded) // as served with --enable-lora
		if opts.MemoryRoutes {
			mux.HandleFunc("POST /sleep", e.handleVLLMSleep)
			mux.HandleFunc("POST /wake_up", e.handleVLLMWakeUp)
			mux.HandleFunc("GET /is_sleeping", func(w http.ResponseWriter, _ *http.Request) {
				e.mu.Lock()
				defer e.mu.Unlock()
				writeJSON(w, http.StatusOK, map[string]any{"is_sleeping": e.released})
			})
		}
	}
	e.srv = httptest.NewServer(mux)
	e.URL = e.srv.URL + "/v1"
	t.Cleanup(e.srv.Close)
	return e
}

// Served returns every completion sampled so far, in order.
func (e *Emulator) Served() []Served {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Served(nil), e.served...)
}

// Requests returns the chat requests received (a /v1/completions call as the conversation it decodes to).
func (e *Emulator) Requests() []llm.ChatRequestBody {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]llm.ChatRequestBody(nil), e.requests...)
}

// sample asks the script and tokenizes its answer: the text's ids then EOS, cut at maxTokens (no EOS,
// finish_reason length), split non-canonically when the seed says so.
func (e *Emulator) sample(req *llm.ChatRequestBody, prompt []int64, maxTokens int) (text string, ids []int64, finish string, reply Reply, err error) {
	e.mu.Lock()
	e.requests = append(e.requests, *req)
	e.mu.Unlock()
	reply = e.script(req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		return "", nil, "", reply, nil
	}
	text = reply.Text
	if ids, err = e.tok.Encode(text); err != nil {
		return
	}
	finish = "stop"
	if reply.FinishReason != "" {
		finish = reply.FinishReason
	}
	drifted := false
	if e.opts.DriftEvery > 0 && req.Seed%e.opts.DriftEvery == 0 {
		pieces, perr := e.tok.Pieces(ids)
		if perr != nil {
			return "", nil, "", reply, perr
		}
		for i := range ids {
			if len(pieces[i]) == 2 {
				ids = append(append(append([]int64(nil), ids[:i]...), pieces[i]...), ids[i+1:]...)
				drifted = true
				break
			}
		}
	}
	if finish != "length" {
		ids = append(ids, e.tok.EOS())
	}
	if maxTokens > 0 && len(ids) > maxTokens {
		ids, finish = ids[:maxTokens], "length"
		if text, err = e.tok.Decode(ids); err != nil {
			return
		}
	}
	e.mu.Lock()
	e.served = append(e.served, Served{Prompt: append([]int64(nil), prompt...), Completion: append([]int64(nil), ids...), Drifted: drifted})
	e.mu.Unlock()
	return text, ids, finish, reply, nil
}

// logprobs gives each sampled id its toy log-prob and its text.
func (e *Emulator) logprobs(ids []int64) ([]llm.TokenLogprob, error) {
	out := make([]llm.TokenLogprob, len(ids))
	for i, id := range ids {
		piece, err := e.tok.Decode([]int64{id})
		if err != nil {
			return nil, err
		}
		out[i] = llm.TokenLogprob{Token: piece, Logprob: TokenLogprob(id), TopLogprobs: []llm.TokenLogprob{}}
	}
	return out, nil
}

func (e *Emulator) handleChat(w http.ResponseWriter, r *http.Request) {
	var req llm.ChatRequestBody
	if !readRequest(w, r, &req, e.models, &req.Model) {
		return
	}
	rendered, err := e.tok.Render(req.Messages, req.Tools, true, req.ChatTemplateKwargs)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	prompt, err := e.tok.Encode(rendered)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	got, ok := e.answer(w, &req, prompt, max(req.MaxTokens, req.MaxCompletionTokens))
	if !ok {
		return
	}
	text, ids, finish, content := got.text, got.ids, got.finish, got.content
	body := &llm.ChatResponseBody{
		ID: "chatcmpl-emulator", Object: "chat.completion", Model: req.Model,
		Choices: []llm.ChatChoice{{Message: llm.ResponseMessage{Role: "assistant", Content: &text}, FinishReason: finish}},
		Usage:   &llm.Usage{PromptTokens: int64(len(prompt)), CompletionTokens: int64(len(ids)), TotalTokens: int64(len(prompt) + len(ids))},
	}
	choice := &body.Choices[0]
	if req.Logprobs != nil && *req.Logprobs {
		choice.Logprobs = &llm.ChoiceLogprobs{Content: content}
	}
	switch e.opts.Layout {
	case LayoutSGLang: // the ids only under SGLang's own flags; return_token_ids means nothing to it
		if req.ReturnPromptTokenIDs != nil && *req.ReturnPromptTokenIDs {
			choice.PromptTokenIDs = prompt
		}
		if req.ReturnMetaInfo != nil && *req.ReturnMetaInfo {
			choice.MetaInfo = sglangMeta(content, ids, finish, len(prompt))
		}
	default:
		if req.ReturnTokenIDs != nil && *req.ReturnTokenIDs {
			body.PromptTokenIDs, choice.TokenIDs = prompt, ids
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// sglangMeta is SGLang's meta_info for a sampled completion: output_token_logprobs as [logprob, id, text].
func sglangMeta(content []llm.TokenLogprob, ids []int64, finish string, promptTokens int) *llm.MetaInfo {
	entries := make([]json.RawMessage, len(ids))
	for i, c := range content {
		entries[i], _ = json.Marshal([]any{c.Logprob, ids[i], c.Token})
	}
	reason, _ := json.Marshal(map[string]string{"type": finish})
	return &llm.MetaInfo{OutputTokenLogprobs: entries, OutputIDs: ids, FinishReason: reason, PromptTokens: int64(promptTokens), CompletionTokens: int64(len(ids))}
}

// handleGenerate serves SGLang's native /generate: input_ids in, text, output_ids and meta_info out.
func (e *Emulator) handleGenerate(w http.ResponseWriter, r *http.Request) {
	var req llm.GenerateRequestBody
	if !readRequest(w, r, &req, nil, nil) {
		return
	}
	messages, ok := e.conversation(w, req.InputIDs)
	if !ok {
		return
	}
	sp := req.SamplingParams
	chat := llm.ChatRequestBody{Messages: messages, MaxTokens: sp.MaxNewTokens, Temperature: sp.Temperature, TopP: sp.TopP, TopK: sp.TopK, Seed: sp.SamplingSeed}
	got, ok := e.answer(w, &chat, req.InputIDs, sp.MaxNewTokens)
	if !ok {
		return
	}
	meta := sglangMeta(got.content, got.ids, got.finish, len(req.InputIDs))
	if !req.ReturnLogprob {
		meta.OutputTokenLogprobs = nil
	}
	writeJSON(w, http.StatusOK, &llm.GenerateResponseBody{Text: got.text, OutputIDs: got.ids, MetaInfo: meta})
}

// handleCompletions samples from a token-id prompt: the prompt is decoded and read back as ChatML into
// the conversation the script is asked with.
func (e *Emulator) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req llm.CompletionRequestBody
	if !readRequest(w, r, &req, e.models, &req.Model) {
		return
	}
	messages, ok := e.conversation(w, req.Prompt)
	if !ok {
		return
	}
	chat := llm.ChatRequestBody{Model: req.Model, Messages: messages, MaxTokens: req.MaxTokens, Temperature: req.Temperature,
		TopP: req.TopP, TopK: req.TopK, Seed: req.Seed}
	got, ok := e.answer(w, &chat, req.Prompt, req.MaxTokens)
	if !ok {
		return
	}
	out, ids, finish, content := got.text, got.ids, got.finish, got.content
	tokens, lps := make([]string, len(ids)), make([]float64, len(ids))
	for i, c := range content {
		tokens[i], lps[i] = c.Token, c.Logprob
	}
	writeJSON(w, http.StatusOK, &llm.CompletionResponseBody{
		ID: "cmpl-emulator", Object: "text_completion", Model: req.Model,
		Choices: []llm.CompletionChoice{{Text: out, FinishReason: finish, PromptTokenIDs: req.Prompt, TokenIDs: ids,
			Logprobs: &llm.CompletionLogprob{Tokens: tokens, TokenLogprobs: lps}}},
		Usage: &llm.Usage{PromptTokens: int64(len(req.Prompt)), CompletionTokens: int64(len(ids)), TotalTokens: int64(len(req.Prompt) + len(ids))},
	})
}

// handleTokenize serves vLLM's /tokenize: a prompt tokenized as it is, or messages rendered through
// the template (add_generation_prompt as asked) and tokenized.
func (e *Emulator) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model               string            `json:"model"`
		Prompt              *string           `json:"prompt"`
		Messages            []llm.Message     `json:"messages"`
		Tools               []json.RawMessage `json:"tools"`
		AddGenerationPrompt bool              `json:"add_generation_prompt"`
		ChatTemplateKwargs  map[string]any    `json:"chat_template_kwargs"`
	}
	if !readRequest(w, r, &req, e.models, &req.Model) {
		return
	}
	text := ""
	switch {
	case req.Prompt != nil:
		text = *req.Prompt
	case e.opts.Layout == LayoutSGLang:
		writeError(w, http.StatusBadRequest, "1 validation error: prompt: Field required")
		return
	default:
		var err error
		if text, err = e.tok.Render(req.Messages, req.Tools, req.AddGenerationPrompt, req.ChatTemplateKwargs); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	ids, err := e.tok.Encode(text)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": 32768, "tokens": ids})
}

// sampled is one answer of the emulator: its text, ids, finish reason and per-token log-probs.
type sampled struct {
	text    string
	ids     []int64
	finish  string
	content []llm.TokenLogprob
}

// answer samples req (whose prompt the model sees as prompt) and its log-probs; on a failure or a
// scripted error status it writes the error response and reports false.
func (e *Emulator) answer(w http.ResponseWriter, req *llm.ChatRequestBody, prompt []int64, maxTokens int) (sampled, bool) {
	text, ids, finish, reply, err := e.sample(req, prompt, maxTokens)
	switch {
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return sampled{}, false
	case reply.Status != 0 && reply.Status != http.StatusOK:
		writeError(w, reply.Status, fmt.Sprintf("scripted status %d", reply.Status))
		return sampled{}, false
	}
	content, err := e.logprobs(ids)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return sampled{}, false
	}
	return sampled{text: text, ids: ids, finish: finish, content: content}, true
}

// conversation decodes a token-id prompt and reads it back as ChatML; on a bad id it writes the error.
func (e *Emulator) conversation(w http.ResponseWriter, prompt []int64) ([]llm.Message, bool) {
	text, err := e.tok.Decode(prompt)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	return ReadChatML(text), true
}

// ReadChatML reads ChatML text (<|im_start|>role\ncontent<|im_end|>…) back into messages; the trailing
// generation prompt (an open assistant turn) is dropped. A user turn of <tool_response> blocks stays one
// user message.
func ReadChatML(text string) []llm.Message {
	var out []llm.Message
	for _, part := range strings.Split(text, "<|im_start|>")[1:] {
		role, content, _ := strings.Cut(part, "\n")
		closed := strings.Contains(content, "<|im_end|>")
		content, _, _ = strings.Cut(content, "<|im_end|>")
		if !closed && role == "assistant" {
			continue // the generation prompt
		}
		out = append(out, llm.Message{Role: role, Content: content})
	}
	return out
}

// CheckTrained checks GRPO samples against what the emulator served: each run of trained tokens of a
// sample must be the ids of one served completion, preceded in the sample by exactly the prompt the
// model saw, and no completion may be trained more often than it was served. It returns the number of
// trained runs and one line per violation.
func (e *Emulator) CheckTrained(rows []schemas.GRPOBatchRow) (runs int, problems []string) {
	key := func(prompt, completion []int64) string { return fmt.Sprint(prompt) + "|" + fmt.Sprint(completion) }
	served := map[string]int{}
	for _, s := range e.Served() {
		served[key(s.Prompt, s.Completion)]++
	}
	trained := map[string]int{}
	for _, s := range rows {
		full := make([]int64, 0, len(s.PromptIDs)+len(s.ResponseIDs))
		for _, id := range s.PromptIDs {
			full = append(full, int64(id))
		}
		for _, id := range s.ResponseIDs {
			full = append(full, int64(id))
		}
		base := len(s.PromptIDs)
		for i := 0; i < len(s.ResponseIDs); {
			if !s.Trained(i) {
				i++
				continue
			}
			j := i
			for j < len(s.ResponseIDs) && s.Trained(j) {
				j++
			}
			k := key(full[:base+i], full[base+i:base+j])
			if served[k] == 0 {
				problems = append(problems, fmt.Sprintf("%s sample %s: trained tokens %d..%d are no served completion in the context it was served in", s.Role, s.SampleID, i, j))
			}
			trained[k]++
			runs++
			i = j
		}
	}
	for k, n := range trained {
		if n > served[k] && served[k] > 0 {
			problems = append(problems, fmt.Sprintf("a completion served %d times is trained %d times (%.60s…)", served[k], n, k))
		}
	}
	return runs, problems
}

// sampling wraps a sampling route: refused with 503 (and counted) while the memory is released, else
// counted in flight and recorded with the weights loaded when it arrived.
func (e *Emulator) sampling(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		if e.released {
			e.whileReleased++
			e.mu.Unlock()
			writeError(w, http.StatusServiceUnavailable, "the engine has released its GPU memory")
			return
		}
		e.inFlight++
		e.servedWeights = append(e.servedWeights, e.loaded)
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.inFlight--
			e.mu.Unlock()
		}()
		next(w, r)
	}
}

// event records a memory or publish request (e.mu held).
func (e *Emulator) event(route, weights string) {
	e.memoryEvents = append(e.memoryEvents, MemoryEvent{Route: route, At: time.Now(), InFlight: e.inFlight, Weights: weights})
}

// handleUpdateWeightsFromDisk is SGLang's POST /update_weights_from_disk {"model_path"}: it loads the
// weights (recorded as the ones later calls are served by), refused while the weights are released.
func (e *Emulator) handleUpdateWeightsFromDisk(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ModelPath string `json:"model_path"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.ModelPath == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"success": false, "message": "model_path is required"})
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.released {
		writeJSON(w, http.StatusBadRequest, map[string]any{"success": false, "message": "the weights' memory is released: resume it first"})
		return
	}
	e.loaded = body.ModelPath
	e.event("/update_weights_from_disk", body.ModelPath)
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Succeeded to update model weights.", "num_paused_requests": 0})
}

// handleSGLangMemory is SGLang's POST /release_memory_occupation (release) or /resume_memory_occupation
// with {"tags": [...]} (absent or null: every region, weights and kv_cache); answered 200 with a null
// body, as SGLang's handler returns nothing on success.
func (e *Emulator) handleSGLangMemory(release bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Tags []string `json:"tags"`
		}
		if r.ContentLength != 0 {
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
		}
		for _, tag := range body.Tags {
			if tag != "weights" && tag != "kv_cache" {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown memory tag %q (weights, kv_cache)", tag))
				return
			}
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		route := "/resume_memory_occupation"
		if release {
			route = "/release_memory_occupation"
		}
		e.released = release
		e.event(route, "")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("null"))
	}
}

// handleVLLMSleep is vLLM's POST /sleep?level=1|2 (dev mode): 200 with an empty body.
func (e *Emulator) handleVLLMSleep(w http.ResponseWriter, r *http.Request) {
	level := r.URL.Query().Get("level")
	if level == "" {
		level = "1"
	}
	if level != "1" && level != "2" {
		writeError(w, http.StatusBadRequest, "level must be 1 or 2")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.released = true
	e.event("/sleep?level="+level, "")
	w.WriteHeader(http.StatusOK)
}

// handleVLLMWakeUp is vLLM's POST /wake_up with optional repeated tags (weights, kv_cache; none: all):
// the engine serves again once every region is back. 200 with an empty body.
func (e *Emulator) handleVLLMWakeUp(w http.ResponseWriter, r *http.Request) {
	tags := r.URL.Query()["tags"]
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(tags) == 0 || slices.Contains(tags, "kv_cache") {
		e.released = false
	}
	e.event("/wake_up?tags="+strings.Join(tags, ","), "")
	w.WriteHeader(http.StatusOK)
}

// MemoryEvents returns the memory and publish requests received, in order.
func (e *Emulator) MemoryEvents() []MemoryEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]MemoryEvent(nil), e.memoryEvents...)
}

// ServedWeights returns, for every sampling call accepted, the weights loaded when it arrived ("" before
// any update_weights_from_disk).
func (e *Emulator) ServedWeights() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.servedWeights...)
}

// CallsWhileReleased is the number of sampling calls refused because the memory was released.
func (e *Emulator) CallsWhileReleased() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.whileReleased
}
