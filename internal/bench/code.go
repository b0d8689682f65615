package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

var codeBlockRE = regexp.MustCompile("(?s)```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```")

// ExtractCode returns the last fenced code block of a response (python-tagged blocks preferred), or "".
func ExtractCode(response string) string {
	blocks := codeBlockRE.FindAllStringSubmatch(response, -1)
	for i := len(blocks) - 1; i >= 0; i-- {
		if lang := strings.ToLower(blocks[i][1]); lang == "python" || lang == "py" || lang == "python3" {
			return blocks[i][2]
		}
	}
	if len(blocks) > 0 {
		return blocks[len(blocks)-1][2]
	}
	return ""
}

// ParseCode reads a code item's tests and meta.
func ParseCode(testsText, metaText string) (CodeTests, CodeMeta, error) {
	var tests CodeTests
	var meta CodeMeta
	if err := json.Unmarshal([]byte(testsText), &tests); err != nil {
		return tests, meta, fmt.Errorf("tests: %w", err)
	}
	if metaText != "" {
		if err := json.Unmarshal([]byte(metaText), &meta); err != nil {
			return tests, meta, fmt.Errorf("meta: %w", err)
		}
	}
	return tests, meta, nil
}

// ScoreCode scores a response to a code item: its last code block is run in the sandbox against the
// public tests and then the private ones; 1 only when every test passes.
func ScoreCode(ctx context.Context, runner *CodeRunner, response string, tests CodeTests, meta CodeMeta) (float64, string, string, error) {
	program := ExtractCode(response)
	if program == "" {
		return 0, "", "no code block", nil
	}
	all := append(append([]CodeTest(nil), tests.Public...), tests.Private...)
	res, err := runner.Run(ctx, program, all, meta.FuncName)
	if err != nil {
		return 0, program, "", err
	}
	if res.Failed < 0 {
		return 1, program, fmt.Sprintf("all %d tests passed", len(all)), nil
	}
	which := "public"
	n := res.Failed + 1
	if res.Failed >= len(tests.Public) {
		which, n = "private", res.Failed-len(tests.Public)+1
	}
	return 0, program, fmt.Sprintf("%s test %d failed: %s (%d of %d passed before it)", which, n, res.Why, res.Passed, len(all)), nil
}
