package grpo

import (
	"context"
	"fmt"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// TestReadCallsMatchesTheRowReader: the column fast path returns what lake.ReadRows returns (less the
// undecoded request columns), across several part files, with empty and missing token lists.
func TestReadCallsMatchesTheRowReader(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	var rows []schemas.LLMCallRow
	for i := 0; i < 1000; i++ {
		r := tokenCall(fmt.Sprintf("c%04d", i), schemas.RoleAgent, 7, i)
		switch i % 7 {
		case 0:
			r.PromptTokenIDs, r.CompletionTokenIDs, r.CompletionLogprobs = nil, nil, nil // server returned none
		case 1:
			r.Error, r.CompletionTokenIDs, r.CompletionLogprobs = "timeout", []int32{}, []float32{}
		case 2:
			for j := 0; j < i; j++ { // long and varying lengths
				r.PromptTokenIDs = append(r.PromptTokenIDs, int32(j))
			}
		}
		rows = append(rows, r)
	}
	key := lake.PartitionKey{Run: "r", Table: schemas.LLMCallsSpec.Name, Step: 7}
	if _, err := laketest.Commit(ctx, lk, key, rows, lake.WriteOptions{ChunkRows: 300}); err != nil {
		t.Fatal(err)
	}
	want, err := lake.ReadRows[schemas.LLMCallRow](ctx, lk, key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readCalls(ctx, lk, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) != len(rows) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	norm := func(r schemas.LLMCallRow) string {
		return fmt.Sprintf("%d %s %s %q %q %d %s %q %v %v %v", r.Step, r.CallID, r.Role, r.ResponseText, r.ToolCalls,
			r.CompletionTokens, r.Model, r.Error, append([]int32{}, r.PromptTokenIDs...), append([]int32{}, r.CompletionTokenIDs...),
			append([]float32{}, r.CompletionLogprobs...))
	}
	for i := range want {
		if norm(got[i]) != norm(want[i]) {
			t.Fatalf("row %d:\n got %s\nwant %s", i, norm(got[i]), norm(want[i]))
		}
	}
}
