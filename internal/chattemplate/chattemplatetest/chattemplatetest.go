// Package chattemplatetest starts Qwen3's real tokenizer and chat templates for tests: the files
// `make tools` puts in bin/qwen3 (scripts/qwen3.sh), or those in $SPADE_QWEN3_DIR.
package chattemplatetest

import (
	"context"
	_ "embed"
	"os"
	"path/filepath"
	"testing"

	"github.com/spadekit/spade/internal/chattemplate"
	"github.com/spadekit/spade/internal/testenv"
)

// Instruct2507 is the chat template of Qwen3's Instruct-2507 models: the hybrid template with its think
// branch taken out (an assistant message is rendered as it is, and the generation prompt opens no think
// block).
//
//go:embed qwen3_instruct_2507.jinja
var Instruct2507 string

// Template names which of Qwen3's templates a helper renders.
type Template int

const (
	// Hybrid is tokenizer_config.json's template (Qwen3-8B): think blocks stripped from assistant turns
	// before the last user query, enable_thinking false opening an empty think block.
	Hybrid Template = iota
	// NonThinking is Instruct2507.
	NonThinking
)

// Qwen3Dir is the directory of Qwen3's tokenizer.json and tokenizer_config.json: $SPADE_QWEN3_DIR, else
// bin/qwen3 at the module root. A test that needs it and finds it missing stops (testenv.Require).
func Qwen3Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SPADE_QWEN3_DIR")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "bin", "qwen3")
	}
	_, err := os.Stat(filepath.Join(dir, "tokenizer.json"))
	testenv.Require(t, err == nil, "Qwen3's tokenizer files are not in %s: run `make tools` (scripts/qwen3.sh) or set SPADE_QWEN3_DIR", dir)
	return dir
}

// Python is the interpreter the helper runs with: $SPADE_PYTHON, else Debian's /usr/bin/python3.
func Python() string {
	if p := os.Getenv("SPADE_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// Start starts a helper over Qwen3's files with the named template; it stops at the end of the test.
func Start(t testing.TB, which Template) *chattemplate.Helper {
	t.Helper()
	o := chattemplate.Options{Python: Python(), ModelDir: Qwen3Dir(t)}
	if which == NonThinking {
		o.TemplateFile = filepath.Join(t.TempDir(), "qwen3_instruct_2507.jinja")
		if err := os.WriteFile(o.TemplateFile, []byte(Instruct2507), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, err := chattemplate.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
