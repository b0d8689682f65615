package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/gobuild"
)

// spadeBin is the spade binary built once for the CLI tests, so they run it as a user does.
var spadeBin string

// testTmp is a directory removed when the tests end, for fixtures shared between benchmark runs.
var testTmp string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "spade-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testTmp = dir
	spadeBin = filepath.Join(dir, "spade")
	if err := gobuild.Build(gobuild.SpadePackage, spadeBin); err != nil {
		fmt.Fprintf(os.Stderr, "building spade: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one spade invocation did.
type result struct {
	code           int
	stdout, stderr string
}

// spade runs the binary with args (the lake and cache come from env), feeding stdin.
func spade(t testing.TB, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(spadeBin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("spade %v: %v", args, err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// must runs spade and fails the test unless it exits 0.
func must(t *testing.T, env []string, args ...string) string {
	t.Helper()
	r := spade(t, env, "", args...)
	if r.code != 0 {
		t.Fatalf("spade %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// localEnv returns the environment of a fresh local lake with its own cache.
func localEnv(t *testing.T) []string {
	return []string{"SPADE_LAKE=" + filepath.Join(t.TempDir(), "lake"), "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN="}
}
