package play

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// Episode is one episode to play: the settings, the Agent and the row it fills.
type Episode struct {
	// Cfg holds the settings read: setting, rollout.* (max_turns, action_format, context,
	// context_tokens, hint_placement, return), generate.hint_mode and llm.agent.max_tokens.
	Cfg *config.Config
	// Client asks the Agent; Tmpl is its template (LoadAgentTemplate).
	Client *llm.Client
	Tmpl   *template.Template
	// Row is the episode's row as the caller filled it: Step (the requests' step), EpisodeID (the
	// calls' key prefix, "<episode_id>/turn=N", and the turns' episode_id), EnvID, Hinted and Seed (reset's
	// seed). Episode fills its outcome: ended_by, error, success, return, turns, tokens, env CPU and
	// neutralized_markers.
	Row schemas.EpisodeRow
	// Hint is shown when Row.Hinted (placed by rollout.hint_placement).
	Hint string
	// LLMNanos and SandboxNanos, when set, accumulate the time spent in Chat and in sandbox calls.
	LLMNanos, SandboxNanos *atomic.Int64
	// Template renders the Agent model's chat template under rollout.token_io_delta template.
	Template Renderer
}

// Renderer renders a model's chat template over a conversation (internal/chattemplate.Helper).
type Renderer interface {
	Render(messages any, tools []json.RawMessage, addGenerationPrompt bool, kwargs map[string]any) (string, error)
}

// lastAnswer is the index of the conversation's last assistant message (-1 when none).
func lastAnswer(messages []llm.Message) int {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == "assistant" {
			return i
		}
	}
	return -1
}

// delta returns the token ids that follow the last completion in the running sequence: what the chat
// template adds for the messages after the last assistant message, with the generation prompt (the
// authors' get_token_delta), from the source rollout.token_io_delta names. A non-empty reason is a play
// that cannot go on (the server failed the call, or the template re-renders the history, so the
// conversation is no longer an extension of what was sampled); the error is a replay error.
func (e Episode) delta(ctx context.Context, step int64, key string, messages []llm.Message, tools []json.RawMessage, observation string, kwargs map[string]any) ([]int64, string, error) {
	cfg := e.Cfg
	tokenize := func(text string) ([]int64, string, error) {
		tok, err := e.Client.Tokenize(ctx, llm.TokenizeRequest{Role: schemas.RoleAgent, Step: step, Key: key, Text: text})
		if err != nil || tok.Failed() {
			return nil, failReason("tokenize", tok), err
		}
		return tok.PromptTokenIDs, "", nil
	}
	last := lastAnswer(messages)
	switch DeltaSource(cfg, e.Template != nil, e.Client.Server(schemas.RoleAgent)) {
	case config.DeltaServer:
		var ids [2][]int64
		for i, with := range []bool{false, true} {
			shown, suffix := messages[:last+1], "/without"
			if with {
				shown, suffix = messages, "/with"
			}
			tok, err := e.Client.TokenizeChat(ctx, llm.TokenizeChatRequest{Role: schemas.RoleAgent, Step: step, Key: key + suffix,
				Messages: shown, Tools: tools, AddGenerationPrompt: with, ChatTemplateKwargs: kwargs})
			if err != nil || tok.Failed() {
				return nil, failReason("tokenize the conversation (rollout.token_io_delta server needs vLLM's /tokenize with messages; with SGLang use template)", tok), err
			}
			ids[i] = tok.PromptTokenIDs
		}
		if len(ids[1]) < len(ids[0]) || !slices.Equal(ids[1][:len(ids[0])], ids[0]) {
			return nil, reRendered, nil
		}
		return ids[1][len(ids[0]):], "", nil
	case config.DeltaTemplate:
		if e.Template == nil {
			return nil, "", errors.New("rollout.token_io_delta template: no chat template renderer was started")
		}
		without, err := e.Template.Render(messages[:last+1], tools, false, kwargs)
		if err != nil {
			return nil, "chat template: " + err.Error(), nil
		}
		with, err := e.Template.Render(messages, tools, true, kwargs)
		if err != nil {
			return nil, "chat template: " + err.Error(), nil
		}
		rest, ok := strings.CutPrefix(with, without)
		if !ok {
			return nil, reRendered, nil
		}
		return tokenize(rest)
	}
	if added := messages[last+1:]; len(added) > 0 && added[0].Role == "tool" {
		if !strings.Contains(cfg.Rollout.TokenIOToolResult, config.TokenIOResult) {
			return nil, "rollout.token_io tokens with tools: rollout.token_io_tool_result (with " + config.TokenIOResult + ") is needed to write tool results without the template; or use rollout.token_io_delta server (vLLM) or template (rollout.chat_template_dir)", nil
		}
		return tokenize(TokenIOText(cfg.Rollout.TokenIOTemplate, ToolResultsText(cfg.Rollout.TokenIOToolResult, added)))
	}
	return tokenize(TokenIOText(cfg.Rollout.TokenIOTemplate, observation))
}

// reRendered ends a token-mode play whose template renders the history differently once a message is
// added (a thinking template that strips past think blocks): its turns are no longer one sequence.
const reRendered = "rollout.token_io tokens: the chat template renders the earlier turns differently once the observation is added (a thinking template strips past think blocks); run this model with rollout.token_io chat and grpo.sample_unit turn"

// failReason words a failed tokenize call; empty for a call that did not come back (the error says why).
func failReason(what string, tok *llm.Completion) string {
	if tok == nil {
		return ""
	}
	return what + ": " + tok.Err
}

// Result is a played episode.
type Result struct {
	Episode schemas.EpisodeRow
	Turns   []schemas.TurnRow
	// SandboxErr is the sandbox failure that ended the episode, if any (the caller decides whether it is
	// an infrastructure failure worth playing again); nil for a program that did not load.
	SandboxErr error
}

// EndedBy classifies a sandbox error: a missed deadline is a timeout, anything else an env error.
func EndedBy(err error) schemas.EndedBy {
	if errors.Is(err, sandbox.ErrTimeout) {
		return schemas.EndedTimeout
	}
	return schemas.EndedEnvError
}

func add(n *atomic.Int64, since time.Time) {
	if n != nil {
		n.Add(int64(time.Since(since)))
	}
}

// Play plays e on prog (or records loadErr, the program's load error, as the episode's end). The returned
// error is non-nil only for a context or replay error; every failure of the env or the Agent is the
// episode's result.
func Play(ctx context.Context, e Episode, prog *sandbox.Program, loadErr error) (Result, error) {
	cfg := e.Cfg
	ep := e.Row
	id := ep.EpisodeID
	// Every call of the play goes to one replica of the Agent's servers (its prefix cache reused).
	ctx, endSession := e.Client.Session(ctx, id)
	defer endSession()
	out := Result{}
	var instance *sandbox.Env
	fail := func(err error) (Result, error) {
		if ctx.Err() != nil {
			return Result{}, context.Cause(ctx)
		}
		ep.EndedBy, ep.Error = EndedBy(err), err.Error()
		if instance != nil {
			ep.EnvCPUSeconds = instance.CPUSeconds()
		}
		out.Episode, out.SandboxErr = ep, err
		return out, nil
	}
	if loadErr != nil {
		out, err := fail(loadErr)
		out.SandboxErr = nil // a program that does not load is not retried per play
		return out, err
	}
	t0 := time.Now()
	instance, err := prog.NewEnv(ctx)
	if err != nil {
		add(e.SandboxNanos, t0)
		return fail(err)
	}
	defer instance.Close()
	authorsTools := cfg.Setting == schemas.SettingTools && cfg.Rollout.ToolCalls == config.ToolCallsAuthors
	if cfg.Rollout.InstanceWarmup == config.WarmupValidation && (cfg.Setting != schemas.SettingTools || authorsTools) {
		if err := Validate(ctx, instance); err != nil {
			add(e.SandboxNanos, t0)
			return fail(fmt.Errorf("the validation before the play: %w", err))
		}
	}
	obs, err := instance.Reset(ctx, ep.Seed)
	if err != nil {
		add(e.SandboxNanos, t0)
		return fail(fmt.Errorf("reset(seed=%d): %w", ep.Seed, err))
	}
	var tools []json.RawMessage
	var known map[string]bool
	if authorsTools {
		// the program's get_tools(), none when it has no such method (the authors' wrapper's [])
		raw, err := instance.Eval(ctx, "get_tools")
		if err == nil {
			err = json.Unmarshal(raw, &tools)
		} else if lacks(err, "get_tools") {
			err = nil
		}
		if err != nil {
			add(e.SandboxNanos, t0)
			return fail(fmt.Errorf("get_tools(): %w", err))
		}
	} else if cfg.Setting == schemas.SettingTools {
		raw, err := instance.Tools(ctx)
		if err == nil {
			err = json.Unmarshal(raw, &tools)
		}
		if err != nil {
			add(e.SandboxNanos, t0)
			return fail(fmt.Errorf("tools(): %w", err))
		}
		known = toolNames(tools)
	}
	add(e.SandboxNanos, t0)

	// neutral breaks the template's control markers in text the env or the Designer wrote (Neutralize)
	// before it enters the conversation, in every token mode, and counts them in the episode's row.
	neutral := func(text string) string {
		out, n := Neutralize(text)
		ep.NeutralizedMarkers += int32(n)
		return out
	}
	obs = neutral(obs)
	data := PromptData{MaxTurns: cfg.Rollout.MaxTurns, ActionFormat: string(cfg.Rollout.ActionFormat), Observation: obs, BoxedPassing: PassesBoxed(cfg)}
	if ep.Hinted {
		hint := neutral(e.Hint)
		data.Observation = FirstObservation(obs, hint, cfg.Rollout.HintPlacement)
		if cfg.Rollout.HintPlacement != config.HintInObservation {
			data.Hint = hint
		}
	}
	messages, err := Opening(e.Tmpl, data)
	if err != nil {
		return Result{}, err
	}
	budget := cfg.Rollout.ContextTokens - cfg.LLM.Agent.MaxTokens
	truncate := cfg.Rollout.Context == config.ContextTruncate
	// count is the running prompt's length under truncate: real tokens where the server reported them.
	var count PromptCount
	kwargs := ThinkingKwargs(cfg, ep.Hinted)
	var rewards []float64
	// seq is, under rollout.token_io tokens, the next turn's prompt ids (nil until turn 0 answered).
	var seq []int64
	// extend sets seq after a turn answered: its prompt and completion ids, then the server's tokens of
	// the token I/O template around the next observation. A non-empty reason ends the play (agent_error).
	extend := func(turn int, comp *llm.Completion, observation string) (reason string, err error) {
		if cfg.Rollout.TokenIO != config.TokenIOTokens {
			return "", nil
		}
		if len(comp.PromptTokenIDs) == 0 || len(comp.CompletionTokenIDs) == 0 {
			return "rollout.token_io tokens: the server returned no prompt or completion token ids (serve the Agent with vLLM, which returns them for return_token_ids)", nil
		}
		t := time.Now()
		delta, reason, err := e.delta(ctx, ep.Step, ObservationKey(id, turn+1), messages, tools, observation, kwargs)
		add(e.LLMNanos, t)
		if err != nil {
			return "", fmt.Errorf("rollout: env %s episode %s turn %d: tokenize the observation: %w", ep.EnvID, id, turn+1, err)
		}
		if reason != "" {
			return reason, nil
		}
		next := make([]int64, 0, len(comp.PromptTokenIDs)+len(comp.CompletionTokenIDs)+len(delta))
		seq = append(append(append(next, comp.PromptTokenIDs...), comp.CompletionTokenIDs...), delta...)
		return "", nil
	}
	ep.EndedBy = schemas.EndedMaxTurns
	for turn := 0; turn < cfg.Rollout.MaxTurns; turn++ {
		req := llm.Request{Role: schemas.RoleAgent, Step: ep.Step, Key: fmt.Sprintf("%s/turn=%d", id, turn), Messages: messages, Tools: tools,
			ChatTemplateKwargs: kwargs}
		if seq != nil {
			// token_io tokens: the running token sequence is the prompt, and its length is exact.
			req.Messages, req.Tools, req.PromptIDs = nil, nil, seq
		}
		room := true
		switch {
		case seq != nil:
			req.MaxTokens, room = AnswerBudget(len(seq), cfg.Rollout.ContextTokens, cfg.LLM.Agent.MaxTokens)
		case truncate:
			req.MaxTokens, room = AnswerBudget(count.Tokens(messages), cfg.Rollout.ContextTokens, cfg.LLM.Agent.MaxTokens)
		default:
			req.Messages = CutHistory(messages, budget)
		}
		if !room {
			break // the context is spent: the episode ends as if out of turns
		}
		t1 := time.Now()
		comp, err := e.Client.Chat(ctx, req)
		add(e.LLMNanos, t1)
		if err != nil {
			return Result{}, fmt.Errorf("rollout: env %s episode %s turn %d: %w", ep.EnvID, id, turn, err)
		}
		ep.Tokens += comp.PromptTokens + comp.CompletionTokens
		if seq == nil && truncate {
			count.Answered(comp, len(req.Messages))
		}
		row := schemas.TurnRow{Step: ep.Step, EpisodeID: id, EnvID: ep.EnvID, Turn: int32(turn), Observation: obs, Info: "{}", CallID: comp.CallID}
		if comp.Failed() {
			row.ParseError = "llm: " + comp.Err
			out.Turns = append(out.Turns, row)
			ep.EndedBy, ep.Error = schemas.EndedAgentError, comp.Err
			break
		}
		if Truncated(comp) {
			// The answer was cut at max_tokens: its tokens are the play's last (GRPO trains on them), but
			// a move read from half an answer is not the Agent's, so the env is not stepped (the authors'
			// missing-EOS rule).
			row.ParseError = TruncatedAnswer
			out.Turns = append(out.Turns, row)
			ep.EndedBy = schemas.EndedTruncated
			break
		}
		var actions []string
		var turnCalls ToolTurn
		malformedNote := false
		var authorsTurn AuthorsToolTurn
		if authorsTools {
			authorsTurn = ReadAuthorsToolTurn(comp.Text, len(tools) > 0, comp.ToolCalls)
		}
		if authorsTools && len(authorsTurn.Calls) > 0 {
			// Every call runs through the program's execute_tool, in order; each output is a tool
			// message, and the turn's reward is 0. A call that fails outside the program's own tool
			// (execute_tool overridden and raising, a deadline) fails the play.
			var results, texts []string
			var callErr error
			for i, c := range authorsTurn.Calls {
				t2 := time.Now()
				raw, err := instance.Eval(ctx, "execute_tool", c.Name, c.Arguments)
				add(e.SandboxNanos, t2)
				output, err := toolOutput(raw, err)
				if err != nil {
					callErr = fmt.Errorf("execute_tool(turn=%d, call=%d): %w", turn, i, err)
					break
				}
				results, texts = append(results, neutral(output)), append(texts, authorsCallText(c))
			}
			row.Action = strings.Join(texts, "\n")
			if callErr != nil {
				if ctx.Err() != nil {
					return Result{}, context.Cause(ctx)
				}
				row.Done = true
				out.Turns = append(out.Turns, row)
				ep.EndedBy, ep.Error = EndedBy(callErr), callErr.Error()
				out.SandboxErr = errors.Unwrap(callErr)
				break
			}
			out.Turns = append(out.Turns, row)
			rewards = append(rewards, 0)
			calls := make([]llm.ToolCall, len(authorsTurn.Calls))
			for i, c := range authorsTurn.Calls {
				args, _ := json.Marshal(c.Arguments)
				calls[i] = llm.ToolCall{ID: fmt.Sprintf("call_%d", i), Type: "function", Function: llm.FunctionCall{Name: fmt.Sprint(c.Name), Arguments: string(args)}}
			}
			messages = AppendToolExchange(messages, comp, ToolTurn{Calls: calls, FromText: strings.Contains(comp.Text, "<tool_call>")}, results)
			obs = strings.Join(results, "\n")
			if reason, err := extend(turn, comp, obs); err != nil || reason != "" {
				if err != nil {
					return Result{}, err
				}
				ep.EndedBy, ep.Error = schemas.EndedAgentError, reason
				break
			}
			continue
		}
		if authorsTools {
			// an answer, or no call: the env's step reads the whole text (the base class's format error)
			actions = []string{comp.Text}
			if authorsTurn.Malformed && MasksMalformed(cfg) {
				row.ParseError = schemas.MaskedTurnPrefix + "a <tool_call> from which no call could be read"
				malformedNote = true
			}
		} else if cfg.Setting == schemas.SettingTools {
			turnCalls, err = ParseToolTurn(comp, known, ToolsFinalAnswer(cfg.Setting, cfg.Generate.HintMode))
			actions = turnCalls.Actions
		} else if PassesBoxed(cfg) {
			actions = []string{BoxedStepAction(VisibleAnswer(comp.Text))}
		} else {
			var action string
			action, err = ParseAction(cfg.Rollout.ActionFormat, comp.Text)
			actions = []string{action}
		}
		if err != nil {
			row.ParseError = err.Error()
			out.Turns = append(out.Turns, row)
			feedback := ParseFeedback(string(cfg.Setting), cfg.Rollout.ActionFormat, err)
			if ToolsFinalAnswer(cfg.Setting, cfg.Generate.HintMode) {
				feedback = ToolsAnswerFeedback(err)
			}
			messages = AppendExchange(messages, comp, feedback)
			obs = feedback
			if reason, err := extend(turn, comp, feedback); err != nil || reason != "" {
				if err != nil {
					return Result{}, err
				}
				ep.EndedBy, ep.Error = schemas.EndedAgentError, reason
				break
			}
			continue
		}
		// Every action of the turn is one env step, in order (the tools setting's several calls of one
		// answer); the turn's reward is their sum and it ends at the first step that is done or fails.
		row.Action = strings.Join(actions, "\n")
		var results []string
		var stepErr error
		done, terminated, success := false, false, false
		for i, action := range actions {
			t2 := time.Now()
			res, err := instance.Step(ctx, action)
			add(e.SandboxNanos, t2)
			if err != nil {
				stepErr = fmt.Errorf("step(turn=%d): %w", turn, err)
				if len(actions) > 1 {
					stepErr = fmt.Errorf("step(turn=%d, call=%d): %w", turn, i, err)
				}
				break
			}
			if res.Shape.Legacy() && ScoresEnvErrors(cfg) && cfg.Generate.Contract == schemas.ContractGymnasium {
				stepErr = &sandbox.Error{Kind: sandbox.KindEnv, Op: "step", Msg: "step returned the old 4-tuple (observation, reward, done, info), not (observation, reward, terminated, truncated, info)"}
				break
			}
			row.Reward += res.Reward
			if len(res.Info) > 0 {
				row.Info = string(res.Info)
			}
			results = append(results, neutral(res.Observation))
			if res.Done {
				done, terminated, success = true, res.Terminated, res.Success()
				break
			}
		}
		if stepErr != nil && ScoresEnvErrors(cfg) && errors.Is(stepErr, sandbox.ErrEnv) {
			// The program raised (or returned the wrong shape): the play ends there as a lost game, reward
			// −1 and terminated, and counts like any other (rollout.env_error score).
			row.Reward += EnvErrorReward
			row.Done = true
			out.Turns = append(out.Turns, row)
			rewards = append(rewards, row.Reward)
			ep.EndedBy, ep.Success, ep.Error = schemas.EndedDone, false, stepErr.Error()
			break
		}
		if stepErr != nil {
			if ctx.Err() != nil {
				return Result{}, context.Cause(ctx)
			}
			row.Done = true
			out.Turns = append(out.Turns, row)
			ep.EndedBy, ep.Error = EndedBy(stepErr), stepErr.Error()
			out.SandboxErr = errors.Unwrap(stepErr)
			break
		}
		row.Done, row.Truncated = done, done && !terminated
		out.Turns = append(out.Turns, row)
		rewards = append(rewards, row.Reward)
		if done {
			ep.EndedBy, ep.Success = schemas.EndedDone, success
			if !terminated {
				ep.EndedBy = schemas.EndedEnvTruncated
			}
			break
		}
		if malformedNote && len(results) > 0 {
			results[len(results)-1] += MalformedToolCallNote
		}
		observation := strings.Join(results, "\n")
		if cfg.Setting == schemas.SettingTools {
			messages = AppendToolExchange(messages, comp, turnCalls, results)
		} else {
			messages = AppendExchange(messages, comp, observation)
		}
		obs = observation
		if reason, err := extend(turn, comp, observation); err != nil || reason != "" {
			if err != nil {
				return Result{}, err
			}
			ep.EndedBy, ep.Error = schemas.EndedAgentError, reason
			break
		}
	}
	ep.Return = EpisodeReturn(cfg.Rollout.Return, rewards, ep.EndedBy == schemas.EndedDone)
	ep.Turns = int32(len(out.Turns))
	ep.EnvCPUSeconds = instance.CPUSeconds()
	out.Episode = ep
	return out, nil
}

// AppendExchange adds the Agent's answer and the next observation to the conversation: an assistant and
// a user message, or, for an answer the server parsed into tool calls (message.tool_calls), the
// assistant's calls and a tool message answering each with the observation (format feedback).
func AppendExchange(messages []llm.Message, comp *llm.Completion, observation string) []llm.Message {
	if len(comp.ToolCalls) > 0 {
		results := make([]string, len(comp.ToolCalls))
		for i := range results {
			results[i] = observation
		}
		return AppendToolExchange(messages, comp, ToolTurn{Calls: comp.ToolCalls}, results)
	}
	return append(messages, llm.Message{Role: "assistant", Content: comp.Text}, llm.Message{Role: "user", Content: observation})
}

// AppendToolExchange adds a tools turn (ParseToolTurn) and its step results to the conversation. An
// <answer> turn is an assistant and a user message. Calls read from the text keep the assistant's text
// verbatim (the template renders it as sampled, the calls included) and add one tool message per
// result; calls the server parsed go in the assistant's tool_calls, each answered by a tool message.
// results[i] answers the turn's call i.
func AppendToolExchange(messages []llm.Message, comp *llm.Completion, turn ToolTurn, results []string) []llm.Message {
	if len(turn.Calls) == 0 {
		return append(messages, llm.Message{Role: "assistant", Content: comp.Text}, llm.Message{Role: "user", Content: strings.Join(results, "\n")})
	}
	calls := make([]llm.ToolCall, len(turn.Calls))
	for i, call := range turn.Calls {
		if call.ID == "" {
			call.ID = fmt.Sprintf("call_%d", i)
		}
		if call.Type == "" {
			call.Type = "function"
		}
		calls[i] = call
	}
	assistant := llm.Message{Role: "assistant", Content: comp.Text, ToolCalls: calls}
	if turn.FromText {
		assistant.ToolCalls = nil
	}
	messages = append(messages, assistant)
	for i, result := range results {
		messages = append(messages, llm.Message{Role: "tool", Content: result, ToolCallID: calls[min(i, len(calls)-1)].ID})
	}
	return messages
}

// ObservationKey is the key of the tokenize call (rollout.token_io tokens) of the observation that
// turn's prompt ends with.
func ObservationKey(episodeID string, turn int) string {
	return fmt.Sprintf("%s/turn=%d/observation", episodeID, turn)
}

// TokenIOText is the text tokenized between a completion and the next turn (rollout.token_io tokens):
// the template with every {observation} replaced by the observation.
func TokenIOText(template, observation string) string {
	return strings.ReplaceAll(template, config.TokenIOObservation, observation)
}

// TruncatedAnswer is the parse_error of the turn whose answer reached max_tokens (Truncated).
const TruncatedAnswer = "truncated: the answer reached max_tokens without ending (finish_reason length); it was not played"

// Truncated reports whether the server stopped an answer at its token limit rather than at its
// end-of-turn token (finish_reason length, as vLLM and SGLang both report it): the play then ends with
// ended_by truncated.
func Truncated(comp *llm.Completion) bool { return comp.FinishReason == "length" }

// ThinkingKwargs is the chat_template_kwargs of a play's calls: rollout.hinted_thinking's for a hinted
// play when it is not default, else llm.agent.thinking's; nil when neither asks anything.
func ThinkingKwargs(cfg *config.Config, hinted bool) map[string]any {
	if hinted {
		if kw := cfg.Rollout.HintedThinking.Kwargs(); kw != nil {
			return kw
		}
	}
	return cfg.LLM.Agent.Thinking.Kwargs()
}

// DeltaSource resolves rollout.token_io_delta: auto is template when a renderer of the model's chat
// template was started (rollout.chat_template_dir or grpo.model_path), else server when the Agent's
// server is vLLM (its /tokenize renders conversations), else text.
func DeltaSource(cfg *config.Config, haveTemplate bool, server llm.Server) config.TokenIODelta {
	d := cfg.Rollout.TokenIODelta
	if d != config.DeltaAuto {
		return d
	}
	switch {
	case haveTemplate:
		return config.DeltaTemplate
	case server == llm.ServerVLLM:
		return config.DeltaServer
	}
	return config.DeltaText
}

// ToolResultsText is what stands for {observation} in a tools turn's text delta: each tool message's
// content in rollout.token_io_tool_result, joined by a newline (Qwen3's <tool_response> blocks of one
// user turn).
func ToolResultsText(resultTemplate string, results []llm.Message) string {
	parts := make([]string, 0, len(results))
	for _, m := range results {
		parts = append(parts, strings.ReplaceAll(resultTemplate, config.TokenIOResult, m.Content))
	}
	return strings.Join(parts, "\n")
}

// lacks reports whether err says the env instance has no attribute name (an AttributeError from the
// program's instance).
func lacks(err error, name string) bool {
	var se *sandbox.Error
	return errors.As(err, &se) && se.Kind == sandbox.KindEnv && strings.HasPrefix(se.Msg, "AttributeError") &&
		strings.Contains(se.Msg, "'"+name+"'")
}

// toolOutput is the output of an execute_tool call: the "output" of the dict it returned, as text. A
// call that failed, or a return that is not a dict, is an error; a non-text output is written as JSON.
func toolOutput(raw json.RawMessage, err error) (string, error) {
	if err != nil {
		return "", err
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(raw, &res) != nil {
		return "", &sandbox.Error{Kind: sandbox.KindEnv, Op: "eval", Msg: "execute_tool did not return a dict: " + string(raw)}
	}
	out, ok := res["output"]
	if !ok {
		return "", nil
	}
	var text string
	if json.Unmarshal(out, &text) == nil {
		return text, nil
	}
	return string(out), nil
}
