package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/chattemplate/chattemplatetest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
)

// doctorLine reports whether out has the check's line with the verdict and detail.
func doctorLine(out, check, verdict, detail string) bool {
	return regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(check) + ` +` + verdict + ` +.*` + regexp.QuoteMeta(detail)).MatchString(out)
}

// spade doctor --llm checks a live server the way spade uses it, in each server's layout: the emulator
// as vLLM (token ids, /tokenize with text and with messages, a history that the Instruct template keeps,
// the LoRA endpoint), as SGLang (ids per choice, no conversation tokenizing, its publish endpoint; the
// LoRA endpoint missing is a failure with its fix), Qwen3-8B's hybrid template (a history re-rendered:
// a note naming the token mode), and a server that returns no token ids (a failure naming the versions
// that do).
func TestDoctorChecksALiveServer(t *testing.T) {
	ok := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "OK"} }
	thinks := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "<think>\nEasy.\n</think>\n\nOK"} }
	vllm := llmtest.StartEmulator(t, chattemplatetest.Start(t, chattemplatetest.NonThinking), ok, llmtest.EmulatorOptions{}, "m")
	sglang := llmtest.StartEmulator(t, chattemplatetest.Start(t, chattemplatetest.NonThinking), ok, llmtest.EmulatorOptions{Layout: llmtest.LayoutSGLang}, "m")
	hybrid := llmtest.StartEmulator(t, chattemplatetest.Start(t, chattemplatetest.Hybrid), thinks, llmtest.EmulatorOptions{}, "m")
	plain := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "OK", Plain: true} }, "m")
	for _, tc := range []struct {
		name, url, publish string
		code               int
		lines              [][3]string
		notes              []string
	}{
		{"vllm", vllm.URL, "lora", 0, [][3]string{{"models", "ok", "m, served by vllm"}, {"token ids", "ok", "log-probs"}, {"tokenize", "ok", "ids for"},
			{"tokenize chat", "ok", "rollout.token_io_delta server works"}, {"history", "ok", "extends the first turn"}, {"publish", "ok", "/v1/load_lora_adapter"}}, nil},
		{"sglang", sglang.URL, "sglang", 0, [][3]string{{"models", "ok", "served by sglang"}, {"token ids", "ok", "log-probs"},
			{"tokenize chat", "ok", "does not tokenize conversations"}, {"history", "ok", "extends"}, {"publish", "ok", "/update_weights_from_disk"}},
			[]string{"rollout.token_io_delta template"}},
		{"sglang-lora", sglang.URL, "lora", 1, [][3]string{{"publish", "FAIL", "HTTP 404"}}, []string{"--enable-lora"}},
		{"hybrid", hybrid.URL, "none", 0, [][3]string{{"history", "ok", "re-renders"}}, []string{"grpo.sample_unit turn"}},
		{"no ids", plain.URL, "none", 1, [][3]string{{"token ids", "FAIL", "prompt 0 ids"}}, []string{"vLLM 0.10.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := spade(t, nil, "", "doctor", "--llm", tc.url, "--publish", tc.publish)
			out := r.stdout
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", r.code, tc.code, out, r.stderr)
			}
			for _, l := range tc.lines {
				if !doctorLine(out, l[0], l[1], l[2]) {
					t.Errorf("no %q line %s … %q in:\n%s", l[0], l[1], l[2], out)
				}
			}
			for _, n := range tc.notes {
				if !strings.Contains(out, n) {
					t.Errorf("the output does not say %q:\n%s", n, out)
				}
			}
			if tc.code != 0 && strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", r.stderr)
			}
		})
	}
}

// TestDoctorChecksTheMemoryRoutesForColocation: --placement colocated asks an SGLang server whether its
// memory saver is on (without releasing anything) and a vLLM server whether sleep mode is served; a
// server without them fails with the flag it needs.
func TestDoctorChecksTheMemoryRoutesForColocation(t *testing.T) {
	ok := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "OK"} }
	tok := chattemplatetest.Start(t, chattemplatetest.NonThinking)
	for _, tc := range []struct {
		name    string
		opts    llmtest.EmulatorOptions
		publish string
		code    int
		verdict string
		detail  string
	}{
		{"sglang saver", llmtest.EmulatorOptions{Layout: llmtest.LayoutSGLang, MemoryRoutes: true}, "sglang", 0, "ok", "enable_memory_saver is on"},
		{"sglang plain", llmtest.EmulatorOptions{Layout: llmtest.LayoutSGLang}, "sglang", 1, "FAIL", "enable_memory_saver is off"},
		{"vllm sleep", llmtest.EmulatorOptions{MemoryRoutes: true}, "none", 0, "ok", "/sleep and /wake_up are served"},
		{"vllm plain", llmtest.EmulatorOptions{}, "none", 1, "FAIL", "GET /is_sleeping: HTTP 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emu := llmtest.StartEmulator(t, tok, ok, tc.opts, "m")
			r := spade(t, nil, "", "doctor", "--llm", emu.URL, "--publish", tc.publish, "--placement", "colocated")
			if r.code != tc.code || !doctorLine(r.stdout, "memory", tc.verdict, tc.detail) {
				t.Fatalf("exit %d, want %d and a memory line %s … %q:\n%s%s", r.code, tc.code, tc.verdict, tc.detail, r.stdout, r.stderr)
			}
			if tc.code != 0 && !strings.Contains(r.stdout, "--enable-") {
				t.Errorf("the failure does not name the flag:\n%s", r.stdout)
			}
			if events := emu.MemoryEvents(); len(events) != 0 {
				t.Errorf("the check released memory: %+v", events)
			}
		})
	}
}
