package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chzyer/readline"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/play"
	"github.com/spadekit/spade/internal/progress"
	"github.com/spadekit/spade/internal/safetext"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// lineReader reads the player's lines: with line editing and history on a terminal, plain lines
// otherwise; both return io.EOF at the end of input and context.Canceled on Ctrl-C (or SIGINT/SIGTERM).
type lineReader interface {
	ReadLine(prompt string) (string, error)
	Close()
}

// newLineReader returns a readline editor when in and out are the process's terminal, else a plain
// reader of in that gives up when ctx ends.
func newLineReader(ctx context.Context, in io.Reader, out io.Writer) lineReader {
	if in == os.Stdin && progress.IsTerminal(os.Stdin) && progress.IsTerminal(out) {
		rl, err := readline.NewEx(&readline.Config{
			Stdout:                 out,
			HistoryLimit:           1000,
			DisableAutoSaveHistory: false,
			InterruptPrompt:        "^C",
			EOFPrompt:              ":quit",
		})
		if err == nil {
			return &editor{rl: rl}
		}
	}
	p := &plainReader{ctx: ctx, out: out, lines: make(chan lineOrErr)}
	go func() {
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				err = nil
			}
			select {
			case p.lines <- lineOrErr{strings.TrimRight(line, "\r\n"), err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// editor is readline on a terminal: arrows, Home/End, Ctrl-A/E/W/U/K, history (up/down, Ctrl-R).
type editor struct{ rl *readline.Instance }

func (e *editor) ReadLine(prompt string) (string, error) {
	e.rl.SetPrompt(prompt)
	line, err := e.rl.Readline()
	switch {
	case errors.Is(err, readline.ErrInterrupt):
		return "", context.Canceled
	case err != nil:
		return "", err
	}
	return line, nil
}

func (e *editor) Close() { e.rl.Close() }

type lineOrErr struct {
	line string
	err  error
}

// plainReader reads lines from a pipe or file, stopping when ctx ends (Ctrl-C outside raw mode).
type plainReader struct {
	ctx   context.Context
	out   io.Writer
	lines chan lineOrErr
}

func (p *plainReader) ReadLine(prompt string) (string, error) {
	fmt.Fprint(p.out, prompt)
	select {
	case l := <-p.lines:
		return l.line, l.err
	case <-p.ctx.Done():
		fmt.Fprintln(p.out)
		return "", context.Canceled
	}
}

func (p *plainReader) Close() {}

// player plays one stored env: episodes from seed on, a turn counter, ':' commands kept from the env.
type player struct {
	prog    *sandbox.Program
	setting schemas.Setting
	hint    string
	seed    int64
	// returnKind is the run's rollout.return: how the episode's return shown at its end is made.
	returnKind config.ReturnKind
	in         lineReader
	out        io.Writer
}

const playHelp = `commands (never sent to the env):
  :help   this list
  :reset  a new episode with the next seed
  :hint   the privileged hint
  :obs    the last observation again
  :solution  the env's solution() (its reference actions), where it has one
  :quit   leave (also Ctrl-D; Ctrl-C leaves at once)
  ::x     send the action ":x"
anything else is your action for this turn (an empty line sends nothing)`

// play runs episodes until :quit, the end of input or an interrupt (context.Canceled: exit 130).
func (p *player) play(ctx context.Context) error {
	out := p.out
	for {
		env, err := p.prog.NewEnv(ctx)
		if err != nil {
			return err
		}
		obs, err := env.Reset(ctx, p.seed)
		if err != nil {
			env.Close()
			return err
		}
		if p.setting == schemas.SettingTools {
			if tools, err := env.Tools(ctx); err == nil {
				fmt.Fprintf(out, "tools: %s\n", safetext.Terminal(string(tools)))
			}
		}
		fmt.Fprintf(out, "\n[seed %d]\n%s\n", p.seed, safetext.Terminal(obs))
		quit, err := p.episode(ctx, env, obs)
		env.Close()
		if quit || err != nil {
			return err
		}
		p.seed++
	}
}

// episode plays one episode; it returns quit when the player leaves.
func (p *player) episode(ctx context.Context, env *sandbox.Env, obs string) (quit bool, err error) {
	out := p.out
	var rewards []float64
	turn, over := 1, false
	for {
		prompt := fmt.Sprintf("turn %d> ", turn)
		if over {
			prompt = "episode over (:reset, :quit)> "
		}
		line, err := p.in.ReadLine(prompt)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(out)
			return true, nil
		}
		if errors.Is(err, context.Canceled) {
			return true, fmt.Errorf("env play: interrupted: %w", err)
		}
		if err != nil {
			return true, err
		}
		action := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(action, ":") && !strings.HasPrefix(action, "::") {
			switch cmd := strings.TrimSpace(action); cmd {
			case ":quit", ":q", ":exit":
				return true, nil
			case ":reset":
				return false, nil
			case ":help", ":h", ":?":
				fmt.Fprintln(out, playHelp)
			case ":hint":
				fmt.Fprintf(out, "hint: %s\n", safetext.Terminal(p.hint))
			case ":obs":
				fmt.Fprintln(out, safetext.Terminal(obs))
			case ":solution":
				if text, err := env.Solution(ctx); err != nil {
					fmt.Fprintf(out, "no solution: %s\n", safetext.Terminal(err.Error()))
				} else {
					fmt.Fprintf(out, "solution: %s\n", safetext.Terminal(text))
				}
			default:
				fmt.Fprintf(out, "unknown command %s (:help lists them; '::x' sends the action ':x')\n", cmd)
			}
			continue
		}
		action = strings.TrimPrefix(action, ":")
		if strings.TrimSpace(action) == "" {
			fmt.Fprintln(out, "nothing sent: type an action (:help lists the commands)")
			continue
		}
		if over {
			fmt.Fprintln(out, "the episode is over: ':reset' for another, ':quit' to leave (nothing was sent)")
			continue
		}
		res, err := env.Step(ctx, action)
		if ctx.Err() != nil {
			return true, fmt.Errorf("env play: interrupted: %w", context.Canceled)
		}
		if err != nil {
			fmt.Fprintf(out, "env error: %s\n", safetext.Terminal(err.Error()))
			var se *sandbox.Error
			if errors.As(err, &se) && se.Kind != sandbox.KindEnv {
				fmt.Fprintln(out, "the env instance is gone: ':reset' for a new episode, ':quit' to leave")
				over = true
			}
			continue
		}
		rewards = append(rewards, res.Reward)
		obs = res.Observation
		fmt.Fprintf(out, "%s\n  turn %d: reward %.3f", safetext.Terminal(res.Observation), turn, res.Reward)
		if p.returnKind == config.ReturnSum {
			fmt.Fprintf(out, " (return so far %.3f)", play.EpisodeReturn(p.returnKind, rewards, false))
		}
		fmt.Fprintf(out, "  done %v", res.Done)
		turn++
		if res.Done {
			over = true
			ending := ""
			if res.Truncated && !res.Terminated {
				ending = " (the env truncated the episode)"
			}
			fmt.Fprintf(out, "  success %v%s\n", res.Success(), ending)
			fmt.Fprintf(out, "episode over after %d turns, return %.3f (%s): ':reset' for another, ':quit' to leave\n",
				turn-1, play.EpisodeReturn(p.returnKind, rewards, res.Terminated), returnRule(p.returnKind, res.Terminated))
			continue
		}
		fmt.Fprintln(out)
	}
}

// returnRule says in words how rollout.return made the episode's return, as the run scores it.
func returnRule(kind config.ReturnKind, terminated bool) string {
	switch {
	case kind == config.ReturnSum:
		return "rollout.return sum: the sum of the rewards"
	case terminated:
		return "rollout.return terminal: the last reward, clipped to [-1, 1]"
	}
	return "rollout.return terminal: 0, as the env did not terminate the episode"
}
