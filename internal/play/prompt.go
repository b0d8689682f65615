package play

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/tmplfile"
	"github.com/spadekit/spade/schemas"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// PromptVersion names the version of the embedded tag-format Agent templates
// (prompts/agent_<setting>.v1.tmpl); the boxed-answer games prompt is prompts/agent_games.v2.tmpl.
const PromptVersion = "v1"

// FirstUserTemplate is the name of the optional template, defined inside an Agent template file with
// {{define "first_user"}}…{{end}}, that renders the episode's first user message.
const FirstUserTemplate = "first_user"

// PromptName returns the embedded Agent template of a setting, action format and hint mode
// (generate.hint_mode). Every version stays in prompts/ unchanged, since its text is part of recorded
// requests (and so of replay):
//   - games with <action> tags: agent_games.v1.tmpl (a system prompt);
//   - games with \boxed{} answers: agent_games.v2.tmpl (no system prompt; the first user message frames
//     the game, after the authors' games template);
//   - tools under hint_mode separate (the authors' settings, ToolsFinalAnswer): agent_tools.v2.tmpl (no
//     system prompt; the first user message frames the first instruction and asks for the closing
//     <answer>done</answer>, after the authors' tools actor);
//   - tools otherwise: agent_tools.v1.tmpl (a system prompt; tool calls only).
//
// The action format does not matter in tools (tools answer with tool calls).
func PromptName(setting schemas.Setting, format config.ActionFormat, hintMode config.HintMode) string {
	switch {
	case setting == schemas.SettingGames && format == config.ActionBoxed:
		return "agent_games.v2.tmpl"
	case ToolsFinalAnswer(setting, hintMode):
		return "agent_tools.v2.tmpl"
	}
	return fmt.Sprintf("agent_%s.%s.tmpl", setting, PromptVersion)
}

// ToolsFinalAnswer reports whether a tools episode ends with the Agent's plain-text
// <answer>…</answer>, delivered to the env's step as "<answer>CONTENT</answer>" (ParseToolTurn): in the
// tools setting under generate.hint_mode = separate, whose Designer prompt (designer_tools.v3) has step
// accept the closing <answer>done</answer> and whose Agent prompt (agent_tools.v2) asks for it. Under
// inline hints a text answer stays a parse error, as in the recorded runs.
func ToolsFinalAnswer(setting schemas.Setting, hintMode config.HintMode) bool {
	return setting == schemas.SettingTools && hintMode == config.HintSeparate
}

// LoadAgentTemplate returns the Agent template of a setting, action format and hint mode: the file at
// overridePath when it is not empty (rollout.prompt_file), else the embedded one (PromptName). A template
// is executed with PromptData (see Opening for what its parts render). The error names the file.
func LoadAgentTemplate(setting schemas.Setting, format config.ActionFormat, hintMode config.HintMode, overridePath string) (*template.Template, error) {
	tmpl, name, readErr, parseErr := tmplfile.Load(promptFS, "prompts/"+PromptName(setting, format, hintMode), overridePath)
	if readErr != nil {
		return nil, fmt.Errorf("rollout: agent prompt for setting %q: %w", setting, readErr)
	}
	if parseErr != nil {
		return nil, fmt.Errorf("rollout: agent prompt %s: %w", name, parseErr)
	}
	return tmpl, nil
}

// LoadRunAgentTemplate returns the Agent template of a run: rollout.prompt_file when set, else the
// embedded prompt rollout.agent_prompt names (setting: LoadAgentTemplate's; problem:
// agent_problem.v1.tmpl; observation: agent_observation.v1.tmpl, the first observation alone).
func LoadRunAgentTemplate(cfg *config.Config) (*template.Template, error) {
	file := "prompts/agent_problem.v1.tmpl"
	switch cfg.Rollout.AgentPrompt {
	case config.AgentPromptProblem:
	case config.AgentPromptObservation:
		file = "prompts/agent_observation.v1.tmpl"
	default:
		return LoadAgentTemplate(cfg.Setting, cfg.Rollout.ActionFormat, cfg.Generate.HintMode, cfg.Rollout.PromptFile)
	}
	tmpl, name, readErr, parseErr := tmplfile.Load(promptFS, file, cfg.Rollout.PromptFile)
	if readErr != nil {
		return nil, fmt.Errorf("rollout: agent prompt: %w", readErr)
	}
	if parseErr != nil {
		return nil, fmt.Errorf("rollout: agent prompt %s: %w", name, parseErr)
	}
	return tmpl, nil
}

// PromptData is what an Agent template (embedded or rollout.prompt_file) is executed with.
type PromptData struct {
	// MaxTurns is rollout.max_turns, the most actions an episode takes.
	MaxTurns int
	// Hint is the env's hint in a hinted play when rollout.hint_placement is system; empty otherwise
	// (unhinted plays, and hinted plays that read the hint in their first observation).
	Hint string
	// Observation is the env's first observation (reset's return). In a hinted play with
	// rollout.hint_placement observation it ends with a blank line and "HINT: <hint>".
	Observation string
	// ActionFormat is rollout.action_format: boxed or tag.
	ActionFormat string
	// BoxedPassing says the env's step receives the boxed answer itself (PassesBoxed: the first plain
	// box is the move), rather than the last box's content.
	BoxedPassing bool
}

// FirstObservation returns the first observation an episode shows: obs, followed by a blank line and
// "HINT: <hint>" when the hint is placed there (a hinted play, rollout.hint_placement observation, a
// non-empty hint).
func FirstObservation(obs, hint string, placement config.HintPlacement) string {
	if hint == "" || placement != config.HintInObservation {
		return obs
	}
	return obs + "\n\nHINT: " + hint
}

// Opening renders the messages an episode starts with. The template's body is the system prompt, left
// out when it renders to nothing; the optional "first_user" template (FirstUserTemplate) renders the
// first user message, which is data.Observation as it is when the template has none. Both are trimmed.
func Opening(tmpl *template.Template, data PromptData) ([]llm.Message, error) {
	system, err := render(tmpl, data)
	if err != nil {
		return nil, err
	}
	first := data.Observation
	if user := tmpl.Lookup(FirstUserTemplate); user != nil {
		if first, err = render(user, data); err != nil {
			return nil, err
		}
	}
	var messages []llm.Message
	if system != "" {
		messages = append(messages, llm.Message{Role: "system", Content: system})
	}
	return append(messages, llm.Message{Role: "user", Content: first}), nil
}

// SystemPrompt renders the Agent's system prompt; the hint is included only for hinted episodes.
func SystemPrompt(tmpl *template.Template, maxTurns int, hint string) (string, error) {
	return render(tmpl, PromptData{MaxTurns: maxTurns, Hint: hint})
}

func render(tmpl *template.Template, data PromptData) (string, error) {
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("rollout: agent prompt %s: %w", tmpl.Name(), err)
	}
	return strings.TrimSpace(buf.String()), nil
}
