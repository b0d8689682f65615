package grpo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// callMeta is the part of an llm_calls row that sample assembly needs besides the tokens; the request
// and the other large text columns are never decoded.
type callMeta struct {
	Step             int64  `parquet:"step"`
	CallID           string `parquet:"call_id"`
	Role             string `parquet:"role"`
	ResponseText     string `parquet:"response_text"`
	ToolCalls        string `parquet:"tool_calls"`
	CompletionTokens int64  `parquet:"completion_tokens"`
	Model            string `parquet:"model"`
	Error            string `parquet:"error"`
}

// errNotPlain marks a file whose token columns are not plain-encoded pages (fall back to the row reader).
var errNotPlain = errors.New("grpo: token column is not plain-encoded")

// readCalls reads an llm_calls partition for sample assembly: the metadata columns through a projection
// and the three token columns page by page as flat arrays, which is an order of magnitude faster than
// rebuilding every list through the row reader (the step's dominant cost). Request and the other unused
// columns are not decoded, so Request is empty in the result. Each file's sha256 is checked against the
// manifest; any file the fast path cannot read (a vanished part during a forced rewrite, an unexpected
// encoding) makes it fall back to lake.ReadRows for the whole partition.
func readCalls(ctx context.Context, lk *lake.Lake, key lake.PartitionKey) ([]schemas.LLMCallRow, error) {
	m, err := lk.Manifest(ctx, key)
	if err != nil {
		return nil, err
	}
	var rows []schemas.LLMCallRow
	for _, f := range m.Files {
		body, err := lake.ReadAll(ctx, lk.Store(), key.Dir()+"/"+f.Name)
		if err == nil {
			sum := sha256.Sum256(body)
			if hex.EncodeToString(sum[:]) != f.SHA256 {
				err = fmt.Errorf("checksum mismatch")
			}
		}
		var part []schemas.LLMCallRow
		if err == nil {
			part, err = decodeCalls(body)
		}
		if err != nil {
			return lake.ReadRows[schemas.LLMCallRow](ctx, lk, key)
		}
		rows = append(rows, part...)
	}
	return rows, nil
}

// decodeCalls decodes one llm_calls Parquet file (see readCalls).
func decodeCalls(body []byte) ([]schemas.LLMCallRow, error) {
	meta, err := lake.DecodeParquet[callMeta](body)
	if err != nil {
		return nil, err
	}
	n := len(meta)
	rows := make([]schemas.LLMCallRow, n)
	for i, m := range meta {
		rows[i] = schemas.LLMCallRow{Step: m.Step, CallID: m.CallID, Role: schemas.Role(m.Role), ResponseText: m.ResponseText, ToolCalls: m.ToolCalls,
			CompletionTokens: m.CompletionTokens, Model: m.Model, Error: m.Error}
	}
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return nil, err
	}
	prompt, err := listColumn[int32](f, "prompt_token_ids", n)
	if err != nil {
		return nil, err
	}
	completion, err := listColumn[int32](f, "completion_token_ids", n)
	if err != nil {
		return nil, err
	}
	logprobs, err := listColumn[float32](f, "completion_logprobs", n)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].PromptTokenIDs, rows[i].CompletionTokenIDs, rows[i].CompletionLogprobs = prompt[i], completion[i], logprobs[i]
	}
	return rows, nil
}

// listColumn reads a list<int32|float> column of a file as one slice per row (nil for an empty or null
// list), sharing one backing array.
func listColumn[T int32 | float32](f *parquet.File, name string, rows int) ([][]T, error) {
	leaf, ok := f.Schema().Lookup(name, "list", "element")
	if !ok || leaf.MaxRepetitionLevel != 1 {
		return nil, fmt.Errorf("%w: %s has an unexpected layout", errNotPlain, name)
	}
	maxDef := byte(leaf.MaxDefinitionLevel)
	total := int64(0)
	for _, rg := range f.RowGroups() {
		total += rg.ColumnChunks()[leaf.ColumnIndex].NumValues()
	}
	flat := make([]T, 0, total)
	starts := make([]int, 0, rows+1)
	for _, rg := range f.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		for {
			page, err := pages.ReadPage()
			if err == io.EOF {
				break
			}
			if err != nil {
				pages.Close()
				return nil, err
			}
			if page.Dictionary() != nil {
				pages.Close()
				return nil, fmt.Errorf("%w: %s is dictionary-encoded", errNotPlain, name)
			}
			data := page.Data()
			var values []T
			switch any(flat).(type) {
			case []int32:
				values = any(data.Int32()).([]T)
			case []float32:
				values = any(data.Float()).([]T)
			}
			reps, defs := page.RepetitionLevels(), page.DefinitionLevels()
			if len(reps) != len(defs) {
				pages.Close()
				return nil, fmt.Errorf("%w: %s levels disagree", errNotPlain, name)
			}
			next := 0
			for i := range defs {
				if reps[i] == 0 {
					starts = append(starts, len(flat))
				}
				if defs[i] == maxDef {
					if next >= len(values) {
						pages.Close()
						return nil, fmt.Errorf("%w: %s has fewer values than levels", errNotPlain, name)
					}
					flat = append(flat, values[next])
					next++
				}
			}
		}
		pages.Close()
	}
	if len(starts) != rows {
		return nil, fmt.Errorf("%w: %s has %d rows, want %d", errNotPlain, name, len(starts), rows)
	}
	starts = append(starts, len(flat))
	out := make([][]T, rows)
	for i := 0; i < rows; i++ {
		if a, b := starts[i], starts[i+1]; b > a {
			out[i] = flat[a:b:b]
		}
	}
	return out, nil
}
