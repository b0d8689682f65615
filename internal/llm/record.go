package llm

import (
	"encoding/json"

	"github.com/spadekit/spade/schemas"
)

// Row converts a recorded call into its `llm_calls` row. Token ids are stored as int32 (vocabularies are
// far below 2^31); the columns stay null when the server did not return them.
func (c *Call) Row() schemas.LLMCallRow {
	row := schemas.LLMCallRow{
		Step:               c.Step,
		CallID:             c.CallID,
		Role:               c.Role,
		RequestHash:        c.RequestHash,
		Request:            c.RequestJSON,
		ResponseText:       c.Text,
		PromptTokenIDs:     toInt32(c.PromptTokenIDs),
		CompletionTokenIDs: toInt32(c.CompletionTokenIDs),
		CompletionLogprobs: toFloat32(c.CompletionLogprobs),
		FinishReason:       c.FinishReason,
		PromptTokens:       c.PromptTokens,
		CompletionTokens:   c.CompletionTokens,
		LatencyMS:          float64(c.LatencyMS),
		Model:              c.Model,
		WeightsVersion:     c.WeightsVersion,
		Error:              c.Err,
	}
	if len(row.CompletionTokenIDs) == 0 {
		// A server that sent log-probs but not the ids they belong to (SGLang without
		// return_meta_info): the log-probs alone cannot be trained on, and the row would not validate.
		row.CompletionLogprobs = nil
	}
	if len(c.ToolCalls) > 0 {
		raw, _ := json.Marshal(c.ToolCalls) // plain structs of strings: cannot fail
		row.ToolCalls = string(raw)
	}
	if row.WeightsVersion == "" {
		row.WeightsVersion = c.Model
	}
	return row
}

// Rows converts calls into rows, in order.
func Rows(calls []Call) []schemas.LLMCallRow {
	rows := make([]schemas.LLMCallRow, len(calls))
	for i := range calls {
		rows[i] = calls[i].Row()
	}
	return rows
}

// CallFromRow rebuilds a recorded call from its row, for replay. The Outcome is exactly what the row
// holds, so a replayed run writes the same row again.
func CallFromRow(row *schemas.LLMCallRow) (Call, error) {
	c := Call{
		CallID:         row.CallID,
		Role:           row.Role,
		Step:           row.Step,
		RequestHash:    row.RequestHash,
		RequestJSON:    row.Request,
		WeightsVersion: row.WeightsVersion,
		Outcome: Outcome{
			Text:               row.ResponseText,
			FinishReason:       row.FinishReason,
			PromptTokenIDs:     toInt64(row.PromptTokenIDs),
			CompletionTokenIDs: toInt64(row.CompletionTokenIDs),
			CompletionLogprobs: toFloat64(row.CompletionLogprobs),
			PromptTokens:       row.PromptTokens,
			CompletionTokens:   row.CompletionTokens,
			Model:              row.Model,
			LatencyMS:          int64(row.LatencyMS),
			Attempts:           1,
			Err:                row.Error,
		},
	}
	if row.ToolCalls != "" {
		if err := json.Unmarshal([]byte(row.ToolCalls), &c.ToolCalls); err != nil {
			return Call{}, err
		}
	}
	return c, nil
}

func toInt32(v []int64) []int32 {
	if v == nil {
		return nil
	}
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

func toInt64(v []int32) []int64 {
	if v == nil {
		return nil
	}
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

func toFloat32(v []float64) []float32 {
	if v == nil {
		return nil
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func toFloat64(v []float32) []float64 {
	if v == nil {
		return nil
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
