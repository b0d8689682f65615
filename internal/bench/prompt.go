package bench

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
)

// Asked is one sample's request and what its scorer needs to know about it.
type Asked struct {
	// Messages and Tools are the request.
	Messages []llm.Message
	Tools    []json.RawMessage
	// Shown is the options in the order shown (choice); ShuffleSeed the seed that ordered them.
	Shown       []string
	ShuffleSeed int64
	// Ordered says the calls must come in the expected order (function_call, non-parallel categories).
	Ordered bool
}

// The instructions appended to each kind's question (the usual instructions of these benchmarks'
// open evaluations, written for this project).
const (
	mathInstruction   = "Please reason step by step, and put your final answer within \\boxed{}."
	choiceInstruction = "Think step by step, then give your final answer on the last line as \"Answer: X\", where X is the letter of one option."
	codeStdin         = "Write a Python 3 program that reads the input from standard input and writes the answer to standard output. Put the whole program in one ```python code block."
	codeFunctional    = "Complete the following Python 3 code and put the whole solution in one ```python code block:\n"
)

// Prompt builds the request for one sample of item; runSeed and sample order a choice item's options.
func Prompt(item schemas.BenchItemRow, runSeed int64, sample int) (Asked, error) {
	user := func(text string) []llm.Message { return []llm.Message{{Role: "user", Content: text}} }
	switch item.Kind {
	case schemas.BenchMath:
		return Asked{Messages: user(item.Question + "\n\n" + mathInstruction)}, nil
	case schemas.BenchChoice:
		options, err := ParseOptions(item.Options)
		if err != nil {
			return Asked{}, err
		}
		seed := ShuffleSeed(runSeed, item.Bench, item.ItemID, sample)
		shown := ShuffleOptions(options, seed)
		var b strings.Builder
		b.WriteString(item.Question)
		b.WriteString("\n\n")
		for i, o := range shown {
			fmt.Fprintf(&b, "%c) %s\n", 'A'+i, o)
		}
		b.WriteString("\n" + choiceInstruction)
		return Asked{Messages: user(b.String()), Shown: shown, ShuffleSeed: seed}, nil
	case schemas.BenchCode:
		_, meta, err := ParseCode(item.Tests, item.Meta)
		if err != nil {
			return Asked{}, err
		}
		if meta.FuncName != "" {
			return Asked{Messages: user(item.Question + "\n\n" + codeFunctional + "```python\n" + meta.StarterCode + "\n```")}, nil
		}
		return Asked{Messages: user(item.Question + "\n\n" + codeStdin)}, nil
	case schemas.BenchFunctionCall:
		tools, err := ToolSchemas(item.Functions)
		if err != nil {
			return Asked{}, fmt.Errorf("functions: %w", err)
		}
		var meta FunctionMeta
		_ = json.Unmarshal([]byte(item.Meta), &meta)
		ordered := !strings.HasPrefix(meta.Category, "parallel")
		return Asked{Messages: user(item.Question), Tools: tools, Ordered: ordered}, nil
	}
	return Asked{}, fmt.Errorf("unknown kind %q", item.Kind)
}
