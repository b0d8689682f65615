package eval

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/progress"
	"github.com/spadekit/spade/schemas"
)

// TestEvalProgressNamesTheCallsInFlight: eval's progress counts the benchmark's samples and its note
// says how many model calls are in flight and the server's median latency, as rollout's does.
func TestEvalProgressNamesTheCallsInFlight(t *testing.T) {
	items := make([]schemas.BenchItemRow, 20)
	for i := range items {
		items[i] = schemas.BenchItemRow{Bench: "m", ItemID: fmt.Sprintf("i%02d", i), Kind: schemas.BenchMath,
			Question: fmt.Sprintf("What is %d + %d?", i, i), Answer: fmt.Sprint(2 * i), Meta: "{}"}
	}
	env := benchEnv(t, items, func(req *llm.ChatRequestBody) llmtest.Reply {
		return llmtest.Reply{Text: "It is \\boxed{0}.", Delay: 30 * time.Millisecond}
	})
	var logs bytes.Buffer
	env.Progress = progress.New(nil, slog.New(slog.NewTextHandler(&logs, nil)), time.Nanosecond)
	if _, err := runBench(context.Background(), env, 0, "m", 2); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !regexp.MustCompile(`\d+ calls in flight  median \d+ms`).MatchString(out) || !strings.Contains(out, "eval m") || !strings.Contains(out, "40") {
		t.Fatalf("eval's progress log names no calls in flight for its 40 samples:\n%s", strings.TrimSpace(out))
	}
}
