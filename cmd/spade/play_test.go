package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// playEnv returns the environment of a lake holding run p1 with one accepted env, "kk-0" (knights and
// knaves: an episode ends after 4 turns).
func playEnv(t *testing.T) []string {
	t.Helper()
	code, err := os.ReadFile(repoFile("testdata/envs/logic_knights_knaves.py"))
	if err != nil {
		t.Fatal(err)
	}
	hint, _ := os.ReadFile(repoFile("testdata/envs/logic_knights_knaves.hint"))
	return playEnvOf(t, string(code), string(hint))
}

// playEnvOf is playEnv with the env's program and hint given.
func playEnvOf(t *testing.T, code, hint string) []string {
	t.Helper()
	env := sandboxEnv(t)
	must(t, env, "--run", "p1", "init", "--preset", "qwen3-4b-games", "--set", "generate.hint_mode=inline", "--set", "gate.shape=lenient")
	ctx := context.Background()
	lk, err := lake.Open(ctx, strings.TrimPrefix(env[0], "SPADE_LAKE="))
	if err != nil {
		t.Fatal(err)
	}
	rows := []schemas.CandidateRow{{Slot: 0, EnvID: "kk-0", Attempt: 1, Skill: schemas.SkillLogic, Setting: schemas.SettingGames, Code: string(code), Hint: string(hint)}}
	if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: "p1", Table: schemas.CandidatesSpec.Name, Step: 0}, rows, lake.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := must(t, env, "--run", "p1", "gate", "--step", "0", "--no-regenerate"); !strings.Contains(out, "1 of 1 slots accepted") {
		t.Fatalf("gate said %q", out)
	}
	return append(env, "SPADE_RUN=p1")
}

// ptySession is a process on a pseudo-terminal with everything it printed so far.
type ptySession struct {
	t    *testing.T
	f    *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startPty(t *testing.T, env []string, args ...string) *ptySession {
	cmd := exec.Command(spadeBin, args...)
	cmd.Env = append(os.Environ(), env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	s := &ptySession{t: t, f: f, cmd: cmd, done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				close(s.done)
				return
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); f.Close() })
	return s
}

func (s *ptySession) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// expect waits until the output has at least n occurrences of want.
func (s *ptySession) expect(want string, n int) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(s.text(), want) < n {
		if time.Now().After(deadline) {
			s.t.Fatalf("no %d× %q in:\n%s", n, want, s.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *ptySession) send(keys string) {
	if _, err := s.f.Write([]byte(keys)); err != nil {
		s.t.Fatal(err)
	}
}

// exitCode waits for the process to end.
func (s *ptySession) exitCode() int {
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return 0
}

// TestEnvPlayOnATerminal drives env play through a pty: line editing (left arrow, insert), history (up),
// ':' commands that never reach the env (the turn counter does not move), the end of an episode after
// which only :reset and :quit are taken, and Ctrl-C, which leaves at once with exit 130.
func TestEnvPlayOnATerminal(t *testing.T) {
	s := startPty(t, playEnv(t), "env", "play", "kk-0", "--seed", "0")
	s.expect("turn 1> ", 1)
	s.send(":hnt\x1b[D\x1b[Di\r") // edited to :hint
	s.expect("hint: ", 1)
	if strings.Contains(s.text(), "unknown command") {
		t.Fatalf("the edited line was not :hint:\n%s", s.text())
	}
	s.send(":help\r")
	s.expect("commands (never sent to the env)", 1)
	s.expect("turn 1> ", 3)  // a command is not a turn
	s.send("\x1b[A\x1b[A\r") // history: two up is :hint again
	s.expect("hint: ", 2)
	s.send(":bogus\r")
	s.expect("unknown command :bogus", 1)
	s.send("\r") // an empty line is not a turn either
	s.expect("nothing sent: type an action", 1)
	s.expect("turn 1> ", 6)
	for turn := 1; turn <= 4; turn++ {
		s.expect("turn "+string(rune('0'+turn))+"> ", 1)
		s.send("x\r")
		s.expect("turn "+string(rune('0'+turn))+": reward", 1)
	}
	s.expect("episode over after 4 turns, return ", 1)
	// The return is the run's (rollout.return terminal in the preset), not a running sum of the rewards.
	s.expect("(rollout.return terminal: ", 1)
	if strings.Contains(s.text(), "total") || strings.Contains(s.text(), "return so far") {
		t.Fatalf("a running sum under rollout.return terminal:\n%s", s.text())
	}
	s.send("y\r")
	s.expect("the episode is over", 1)
	if strings.Contains(s.text(), "turn 5") {
		t.Fatalf("a move after the end was sent:\n%s", s.text())
	}
	s.send(":reset\r")
	s.expect("[seed 1]", 1)
	s.expect("turn 1> ", 7)
	s.send("\x03") // Ctrl-C
	if code := s.exitCode(); code != exitInterrupted {
		t.Fatalf("Ctrl-C: exit %d, want %d:\n%s", code, exitInterrupted, s.text())
	}
	<-s.done
	if text := s.text(); !strings.Contains(text, "spade: env play: interrupted") || strings.Contains(text, "context canceled") {
		t.Fatalf("Ctrl-C: want the line \"spade: env play: interrupted\" and no Go error text:\n%s", text)
	}
}

// TestEnvPlayInterruptedOffATerminal: with input from a pipe, SIGINT while env play waits for a line
// ends it with exit 130 (it was ignored before); the end of input ends it with 0.
func TestEnvPlayInterruptedOffATerminal(t *testing.T) {
	env := playEnv(t)
	cmd := exec.Command(spadeBin, "env", "play", "kk-0")
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var out bytes.Buffer
	var mu sync.Mutex
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := stdout.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	_, _ = io.WriteString(stdin, ":help\n")
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		ready := strings.Count(out.String(), "turn 1> ") >= 2
		mu.Unlock()
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second prompt:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("SIGINT while waiting for a line: %v, want exit %d", err, exitInterrupted)
	}
	if r := spade(t, env, "x\n:bogus\n", "env", "play", "kk-0"); r.code != 0 || !strings.Contains(r.stdout, "turn 1: reward") || !strings.Contains(r.stdout, "unknown command :bogus") {
		t.Fatalf("piped play: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The start of an id names the env when only one has it; an id nobody has is refused with the query
	// that lists them.
	if r := spade(t, env, "", "env", "play", "kk"); r.code != 0 || !strings.Contains(r.stdout, "env kk-0 (") {
		t.Errorf("env play kk: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := spade(t, env, "", "env", "play", "zz")
	if msg, ok := usageMessage(r.stderr); r.code != 2 || !ok || !strings.Contains(msg, `no env "zz" in the envs table of run p1 (list them: spade --lake `) {
		t.Errorf("env play zz: exit %d, %q", r.code, r.stderr)
	}
}

// What an env writes never acts on the terminal of the person playing it: escape sequences (a title
// change, a screen clear, colours), a carriage return and a bidi override in its observations, its hint
// and its solution are shown as visible escapes, and no ESC byte reaches the output.
func TestEnvPlayShowsControlSequencesEscaped(t *testing.T) {
	code := `class TermEnv:
    def reset(self, seed=None):
        return "\x1b]0;pwned\x07\x1b[2Jhello\rworld \u202eevil", {}
    def step(self, action):
        return "\x1b[31mred", 0.0, True, False, {}
    def solution(self):
        return "\x1b[5mblink"
`
	env := playEnvOf(t, code, "hint \x1b[8m hidden")
	r := spade(t, env, ":hint\n:solution\nx\n:quit\n", "env", "play", "kk-0", "--seed", "0")
	if r.code != 0 {
		t.Fatalf("env play: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{`\x1b]0;pwned\x07\x1b[2Jhello\x0dworld \u202eevil`, `\x1b[31mred`, `solution: \x1b[5mblink`, `hint: hint \x1b[8m hidden`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("env play output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.ContainsAny(r.stdout, "\x1b\r\u202e") {
		t.Errorf("a control character reached the terminal:\n%q", r.stdout)
	}
}
