package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// validatorClient is an llm.Client whose screen role asks a stand-in server that answers every call
// with text.
func validatorClient(t *testing.T, text string) (*llm.Client, *llmtest.Server) {
	t.Helper()
	srv := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: text} }, "validator")
	client, err := llm.New(context.Background(), llm.Settings{Roles: map[schemas.Role]llm.RoleSettings{
		schemas.RoleScreen: {BaseURL: srv.URL, Model: "validator", MaxTokens: 16384, Temperature: 0.3, TopP: 0.9}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.KeepRequests(true)
	return client, srv
}

// authorsToolsOptions are the official checks of the tools presets (gate.tools_checks authors) for a
// candidate of the second pool (step 8), where the authors' reset gate runs.
func authorsToolsOptions(screen Screen) CheckOptions {
	return CheckOptions{Setting: schemas.SettingTools, Hint: "think", Checks: config.GateOfficial, Contract: schemas.ContractGymnasium,
		LoadTimeout: 60 * time.Second, Shape: config.ShapeAuthors, ToolsChecks: config.ToolsChecksAuthors, Step: 8, Screen: screen}
}

// Every program of testdata/envs-authors/tools, written to the authors' tools contract, is accepted by
// spade's official tools gate under gate.tools_checks authors exactly when its README row says the
// authors' validation accepts it (their loader's validation, validate_game, their reset gate), with a
// validator that answers \boxed{yes}; a refused one fails with the README's reason, and only a program
// that reaches outside itself is refused where the authors accept. The validator is called once per
// program that reaches it, with the code and without the tools or the first observation.
func TestAuthorsToolsGate(t *testing.T) {
	dir := repoPath("testdata", "envs-authors", "tools")
	rows := readAuthorsTable(t, filepath.Join(dir, "README.md"))
	programs, _ := filepath.Glob(filepath.Join(dir, "*.py"))
	if len(rows) < 16 || len(rows) != len(programs) {
		t.Fatalf("README lists %d programs, the folder holds %d (want one row each, at least 16)", len(rows), len(programs))
	}
	client, srv := validatorClient(t, "Every check is written by some tool.\n\\boxed{yes}")
	pool := newAuthorsPool(t)
	ctx := context.Background()
	outside, refusedByAuthors := 0, 0
	for _, row := range rows {
		t.Run(strings.TrimSuffix(row.program, ".py"), func(t *testing.T) {
			code, err := os.ReadFile(filepath.Join(dir, row.program))
			if err != nil {
				t.Fatal(err)
			}
			calls := srv.Count()
			v := Check(ctx, pool, string(code), authorsToolsOptions(&ValidatorScreen{Client: client, Step: 8}))
			if v.Err != nil {
				t.Fatalf("the checks could not run: %v", v.Err)
			}
			switch {
			case row.spade == "accepted":
				if !v.Accepted {
					t.Fatalf("README says accepted; refused: %s", v.FailureText())
				}
				if row.authors != "accepts" {
					t.Fatalf("spade accepts what the README says the authors refuse")
				}
				if srv.Count() != calls+1 {
					t.Fatalf("the validator was called %d times, want once", srv.Count()-calls)
				}
				req := srv.Requests()[len(srv.Requests())-1]
				if len(req.Messages) != 2 || !strings.Contains(req.Messages[1].Content, string(code)) || len(req.Tools) != 0 ||
					req.Temperature == nil || *req.Temperature != 0.3 {
					t.Fatalf("the validator's request: %+v", req)
				}
			case strings.HasPrefix(row.spade, "refused: "):
				want := strings.TrimPrefix(row.spade, "refused: ")
				if v.Accepted || !strings.Contains(v.FailureText(), want) {
					t.Fatalf("README says refused with %q; accepted=%v %s", want, v.Accepted, v.FailureText())
				}
				switch row.authors {
				case "refuses":
					refusedByAuthors++
				case "accepts (reaches outside)":
					outside++
				default:
					t.Fatalf("refused, but the README says the authors %q: only a program that reaches outside itself may be refused where the authors accept", row.authors)
				}
			default:
				t.Fatalf("README cell %q is neither accepted nor refused: REASON", row.spade)
			}
		})
	}
	if outside < 2 || refusedByAuthors < 5 {
		t.Errorf("%d programs that reach outside themselves (want at least 2), %d the authors refuse (want at least 5)", outside, refusedByAuthors)
	}
}

// The authors' reset gate and validator as the official tools checks run them: the reset gate is
// skipped at the first pool's step and refuses from the second on; a program the authors accept and
// spade's own tools checks (gate.tools_checks spade) refuse (no tools, a reset that ignores its seed, a
// class without tools()) passes under authors; the validator's \boxed{no} refuses with its reasoning,
// and an answer without a box accepts.
func TestAuthorsToolsChecks(t *testing.T) {
	pool := newAuthorsPool(t)
	ctx := context.Background()
	read := func(name string) string {
		b, err := os.ReadFile(repoPath("testdata", "envs-authors", "tools", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	yes, _ := validatorClient(t, `\boxed{yes}`)
	criteria := read("refuse_criteria_raise.py")
	first := authorsToolsOptions(&ValidatorScreen{Client: yes})
	first.Step = 0
	v := Check(ctx, pool, criteria, first)
	if !v.Accepted {
		t.Fatalf("at step 0 the reset gate does not run; refused: %s", v.FailureText())
	}
	for _, r := range v.Results {
		if r.Check == CheckResetGate && (!r.Skipped || !strings.Contains(r.Error, "first pool")) {
			t.Fatalf("reset_gate at step 0: %+v", r)
		}
	}
	if v := Check(ctx, pool, criteria, authorsToolsOptions(&ValidatorScreen{Client: yes})); v.Accepted || v.Failure().Check != CheckResetGate ||
		!strings.Contains(v.Failure().Error, "[0 1 2]") {
		t.Fatalf("at step 8 the reset gate refuses: %+v", v.Failure())
	}

	for _, name := range []string{"accept_no_tools.py", "accept_unseeded_reset.py", "accept_plain_class.py"} {
		code := read(name)
		spade := authorsToolsOptions(&allReachable{})
		spade.ToolsChecks = config.ToolsChecksSpade
		if v := Check(ctx, pool, code, spade); v.Accepted {
			t.Errorf("%s: spade's own tools checks accept it; the test needs a program they refuse", name)
		}
		if v := Check(ctx, pool, code, authorsToolsOptions(&ValidatorScreen{Client: yes})); !v.Accepted {
			t.Errorf("%s: refused under the authors' tools checks: %s", name, v.FailureText())
		}
	}

	no, _ := validatorClient(t, "The refund ticket is never written by any tool.\n\\boxed{no}")
	v = Check(ctx, pool, read("accept_stock_total.py"), authorsToolsOptions(&ValidatorScreen{Client: no}))
	if v.Accepted || v.Failure().Check != CheckToolsScreen || !strings.Contains(v.Failure().Error, "never written by any tool") {
		t.Fatalf("validator \\boxed{no}: %+v", v.Failure())
	}
	unboxed, _ := validatorClient(t, "I am not sure.")
	if v := Check(ctx, pool, read("accept_stock_total.py"), authorsToolsOptions(&ValidatorScreen{Client: unboxed})); !v.Accepted {
		t.Fatalf("a validator answer without a box accepts; refused: %s", v.FailureText())
	}
}

// ValidatorVerdict reads the first one-line \boxed{...} of the answer: yes, y and true accept in any
// case; anything else refuses; no box, or an empty answer, accepts.
func TestValidatorVerdict(t *testing.T) {
	for _, c := range []struct {
		text string
		ok   bool
	}{
		{`\boxed{yes}`, true},
		{`So: \boxed{ Y }`, true},
		{`\boxed{TRUE}`, true},
		{`\boxed{no}`, false},
		{`\boxed{no} but then \boxed{yes}`, false},
		{`\boxed{yes, mostly}`, false},
		{"\\boxed{\nyes}", true},
		{"", true},
		{"No verdict here.", true},
		{`<think>\boxed{no}</think> \boxed{yes}`, false},
	} {
		if ok, reason := ValidatorVerdict(c.text); ok != c.ok || (!ok && reason == "") {
			t.Errorf("ValidatorVerdict(%q) = %v %q, want %v", c.text, ok, reason, c.ok)
		}
	}
}
