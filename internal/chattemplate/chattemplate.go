// Package chattemplate renders a model's own chat template and runs its byte-level BPE tokenizer, from
// the model's Hugging Face files (tokenizer.json, tokenizer_config.json), in one long-lived Python
// process (chattemplate.py, Jinja2 as transformers uses it, and the regex module).
//
// Rendering is what the Agent's token deltas are made of (the authors' get_token_delta: the template
// rendered with and without the newest message, the text between the two). The tokenizer is for the
// test suite's server emulator and for checks: spade's own calls are tokenized by the server.
package chattemplate

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

//go:embed chattemplate.py
var helperSource []byte

// Helper is a running chattemplate.py for one model. Its methods are safe for concurrent use (calls
// are serialized).
type Helper struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *strings.Builder
	dir    string
	eos    int64
}

// Options say which model and interpreter a Helper runs with.
type Options struct {
	// Python is the interpreter (it needs jinja2 and regex: Debian's python3-jinja2, python3-regex).
	Python string
	// ModelDir holds the model's tokenizer.json and tokenizer_config.json.
	ModelDir string
	// TemplateFile, when set, is a Jinja2 file rendered instead of tokenizer_config.json's chat_template.
	TemplateFile string
	// RenderOnly starts without the tokenizer: only tokenizer_config.json is read (and only jinja2 is
	// needed); Encode, Decode and Pieces then fail.
	RenderOnly bool
}

// Start starts the helper; the process ends with ctx or Close. A missing file or module is its error,
// naming what to install.
func Start(ctx context.Context, o Options) (*Helper, error) {
	names := []string{"tokenizer.json", "tokenizer_config.json"}
	if o.RenderOnly {
		names = names[1:]
	}
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(o.ModelDir, name)); err != nil {
			return nil, fmt.Errorf("chattemplate: the model directory %s has no %s (a Hugging Face model directory has it)", o.ModelDir, name)
		}
	}
	dir, err := os.MkdirTemp("", "spade-chattemplate-")
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "chattemplate.py")
	if err := os.WriteFile(script, helperSource, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	args := []string{script, o.ModelDir}
	if o.TemplateFile != "" {
		args = append(args, "--template", o.TemplateFile)
	}
	if o.RenderOnly {
		args = append(args, "--render-only")
	}
	python := o.Python
	if python == "" {
		python = "python3"
	}
	cmd := exec.CommandContext(ctx, python, args...)
	h := &Helper{cmd: cmd, dir: dir, stderr: &strings.Builder{}}
	cmd.Stderr = h.stderr
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h.stdout = bufio.NewReaderSize(out, 1<<20)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chattemplate: start %s: %w", python, err)
	}
	var info struct {
		EOS int64 `json:"eos_token_id"`
	}
	if err := h.call(map[string]any{"op": "info"}, &info); err != nil {
		h.Close()
		return nil, err
	}
	h.eos = info.EOS
	return h, nil
}

// call sends one request and decodes its answer into out.
func (h *Helper) call(req map[string]any, out any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := h.stdin.Write(append(line, '\n')); err != nil {
		return h.died(err)
	}
	answer, err := h.stdout.ReadBytes('\n')
	if err != nil {
		return h.died(err)
	}
	var failed struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(answer, &failed) == nil && failed.Error != "" {
		return fmt.Errorf("chattemplate: %s: %s", req["op"], failed.Error)
	}
	return json.Unmarshal(answer, out)
}

// died explains a helper that stopped answering: its stderr's last line (a missing module names the
// Debian package).
func (h *Helper) died(err error) error {
	msg := strings.TrimSpace(h.stderr.String())
	if i := strings.LastIndex(msg, "\n"); i >= 0 {
		msg = msg[i+1:]
	}
	if strings.Contains(msg, "No module named") {
		msg += " (install python3-jinja2 and python3-regex, or point the interpreter setting at one that has jinja2 and regex)"
	}
	if msg == "" {
		return fmt.Errorf("chattemplate: the helper stopped: %w", err)
	}
	return errors.New("chattemplate: the helper stopped: " + msg)
}

// Render renders the template over messages (OpenAI chat messages: role, content, tool_calls,
// tool_call_id; any JSON-marshalable form) with the tools, the generation prompt when asked, and the
// template's extra variables (e.g. enable_thinking), as transformers' apply_chat_template(tokenize=False).
func (h *Helper) Render(messages any, tools []json.RawMessage, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	req := map[string]any{"op": "render", "messages": messages, "add_generation_prompt": addGenerationPrompt, "kwargs": kwargs}
	if len(tools) > 0 {
		req["tools"] = tools
	}
	var out struct {
		Text string `json:"text"`
	}
	err := h.call(req, &out)
	return out.Text, err
}

// Encode tokenizes text as the model's tokenizer does without special-token additions
// (add_special_tokens false): added tokens spelled in the text become their ids.
func (h *Helper) Encode(text string) ([]int64, error) {
	var out struct {
		IDs []int64 `json:"ids"`
	}
	err := h.call(map[string]any{"op": "encode", "text": text}, &out)
	return out.IDs, err
}

// Decode turns ids back into text (invalid UTF-8 replaced, as the tokenizers library does).
func (h *Helper) Decode(ids []int64) (string, error) {
	var out struct {
		Text string `json:"text"`
	}
	err := h.call(map[string]any{"op": "decode", "ids": ids}, &out)
	return out.Text, err
}

// Pieces returns, for each id, the two ids its last BPE merge joined (empty for a byte or an added
// token): replacing an id by its pieces spells the same text with other ids, a non-canonical split.
func (h *Helper) Pieces(ids []int64) ([][]int64, error) {
	var out struct {
		Pieces [][]int64 `json:"pieces"`
	}
	err := h.call(map[string]any{"op": "pieces", "ids": ids}, &out)
	return out.Pieces, err
}

// EOS is the id of the tokenizer_config.json's eos_token (Qwen3: <|im_end|>), -1 when it has none.
func (h *Helper) EOS() int64 { return h.eos }

// Close stops the helper and removes its script.
func (h *Helper) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stdin.Close()
	err := h.cmd.Wait()
	os.RemoveAll(h.dir)
	if err != nil && !strings.Contains(err.Error(), "killed") {
		return fmt.Errorf("chattemplate: %w", err)
	}
	return nil
}
