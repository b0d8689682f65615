package bench

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spadekit/spade/internal/inputfile"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// InputError is a problem with an input file or flag: the file and what is wrong with it, in one line.
// The CLI maps it to exit code 2.
type InputError = inputfile.Error

// ImportResult reports an import.
type ImportResult struct {
	// Imported counts new items committed; Skipped counts duplicates (by id) of the input or of the items
	// already in the lake.
	Imported, Skipped int
	// Total is the benchmark's size after the import.
	Total int
}

// ParseKind returns the importable kind named s (every BenchKind but external, whose results `spade
// eval import` reads without items), or an InputError naming the flag.
func ParseKind(s string) (schemas.BenchKind, error) {
	var kinds []schemas.BenchKind
	for _, k := range schemas.BenchKindValues() {
		if k == schemas.BenchExternal {
			continue
		}
		if string(k) == s {
			return k, nil
		}
		kinds = append(kinds, k)
	}
	if s == string(schemas.BenchExternal) {
		return "", &InputError{File: "--kind", Problem: "external benchmarks have no items: import an official harness's results with `spade eval import --format FORMAT DIR --step N`"}
	}
	return "", &InputError{File: "--kind", Problem: fmt.Sprintf("unknown kind %q: want %s", s, schemas.JoinValues(kinds, ", "))}
}

// Import reads files as items of the given kind and merges them into the benchmark `name`, deduplicating
// by id. Nothing is committed unless every file is valid.
func Import(ctx context.Context, lk *lake.Lake, name string, kind schemas.BenchKind, files []string) (ImportResult, error) {
	if err := lake.ValidName(name); err != nil {
		return ImportResult{}, &InputError{File: "--name", Problem: err.Error()}
	}
	if _, err := ParseKind(string(kind)); err != nil {
		return ImportResult{}, err
	}
	if kind == schemas.BenchEnvPool {
		return ImportResult{}, &InputError{File: "--kind", Problem: "env_pool items come from the lake, not files: name --pool NAME or RUN@STEP sources (ImportEnvPool)"}
	}
	if len(files) == 0 {
		return ImportResult{}, &InputError{File: "(no files)", Problem: "name at least one .parquet or .jsonl file"}
	}
	var records []record
	for _, f := range files {
		recs, err := readRecords(ctx, f)
		if err != nil {
			return ImportResult{}, err
		}
		records = append(records, recs...)
	}
	incoming, err := mapRecords(name, kind, records)
	if err != nil {
		return ImportResult{}, err
	}
	return merge(ctx, lk, name, kind, incoming)
}

// merge adds incoming to the benchmark `name`, skipping ids it already holds, and commits the whole
// benchmark sorted by id (nothing when no item is new).
func merge(ctx context.Context, lk *lake.Lake, name string, kind schemas.BenchKind, incoming []schemas.BenchItemRow) (ImportResult, error) {
	key := lake.BenchKey(name)
	existing, err := lake.ReadRows[schemas.BenchItemRow](ctx, lk, key)
	if err != nil && !errors.Is(err, lake.ErrNotCommitted) {
		return ImportResult{}, err
	}
	if len(existing) > 0 && existing[0].Kind != kind {
		return ImportResult{}, &InputError{File: "--kind", Problem: fmt.Sprintf("benchmark %s holds %s items, not %s", name, existing[0].Kind, kind)}
	}
	merged, imported, skipped := inputfile.AppendNew(existing, incoming, func(r schemas.BenchItemRow) string { return r.ItemID })
	res := ImportResult{Imported: imported, Skipped: skipped, Total: len(merged)}
	if res.Imported == 0 && len(existing) > 0 {
		return res, nil
	}
	sort.Slice(merged, func(i, j int) bool { return merged[i].ItemID < merged[j].ItemID })
	spec := lake.TxnSpec{Corpus: name, Stage: "bench-import", Force: len(existing) > 0}
	_, err = lake.CommitRows(ctx, lk, spec, key, merged, lake.WriteOptions{})
	return res, err
}

// Items reads a benchmark's items, sorted by id; an unknown benchmark is an InputError naming the flag.
func Items(ctx context.Context, lk *lake.Lake, name string) ([]schemas.BenchItemRow, error) {
	rows, err := lake.ReadRows[schemas.BenchItemRow](ctx, lk, lake.BenchKey(name))
	if errors.Is(err, lake.ErrNotCommitted) {
		return nil, &InputError{File: "--bench", Problem: fmt.Sprintf("no benchmark %q in the lake (run `%s --kind KIND FILE...` first)", name, lk.Command("bench", "import", "--name", name))}
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ItemID < rows[j].ItemID })
	return rows, nil
}

// record is one input row: its fields as decoded JSON, and where it came from.
type record struct{ inputfile.Record }

func readRecords(ctx context.Context, path string) ([]record, error) {
	if err := inputfile.Check(path); err != nil {
		return nil, err
	}
	var recs []record
	for r, err := range inputfile.Rows(ctx, path, inputfile.Need{}) {
		if err != nil {
			return nil, err
		}
		recs = append(recs, record{r})
	}
	if len(recs) == 0 {
		return nil, &InputError{File: path, Problem: "no items in file"}
	}
	return recs, nil
}

// text returns the first of the named fields that holds a string, a number or a boolean, as text.
func (r record) text(names ...string) (string, bool) {
	for _, n := range names {
		if s, ok := r.Text(n); ok {
			return s, true
		}
		if b, ok := r.Fields[n].(bool); ok {
			return fmt.Sprint(b), true
		}
	}
	return "", false
}

func (r record) need(what string, names ...string) (string, error) {
	v, ok := r.text(names...)
	if !ok || strings.TrimSpace(v) == "" {
		return "", r.Fail("no %s (a non-empty %s field)", what, strings.Join(quoteAll(names), " or "))
	}
	return v, nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// mapRecords applies the kind's column mapping (see the package comment).
func mapRecords(bench string, kind schemas.BenchKind, recs []record) ([]schemas.BenchItemRow, error) {
	var rows []schemas.BenchItemRow
	answers := map[string]any{} // function_call: ground truth rows of a possible_answer file
	if kind == schemas.BenchFunctionCall {
		var questions []record
		for _, r := range recs {
			_, hasQ := r.Fields["question"]
			if gt, ok := r.Fields["ground_truth"]; ok && !hasQ {
				id, err := r.need("id", "id")
				if err != nil {
					return nil, err
				}
				answers[id] = gt
				continue
			}
			questions = append(questions, r)
		}
		recs = questions
	}
	for _, r := range recs {
		row, err := mapRecord(bench, kind, r, answers)
		if err != nil {
			return nil, err
		}
		if err := row.Validate(); err != nil {
			return nil, r.Fail("%v", err)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, &InputError{File: recs0File(recs), Problem: "no items (only answers?)"}
	}
	return rows, nil
}

func recs0File(recs []record) string {
	if len(recs) == 0 {
		return "(input)"
	}
	return recs[0].File
}

func mapRecord(bench string, kind schemas.BenchKind, r record, answers map[string]any) (schemas.BenchItemRow, error) {
	row := schemas.BenchItemRow{Bench: bench, Kind: kind, Meta: "{}", Source: filepath.Base(r.File)}
	var err error
	switch kind {
	case schemas.BenchMath:
		if row.ItemID, err = r.need("id", "id", "problem_id", "unique_id"); err != nil {
			return row, err
		}
		if row.Question, err = r.need("problem", "problem", "question"); err != nil {
			return row, err
		}
		if row.Answer, err = r.need("answer", "answer"); err != nil {
			return row, err
		}
	case schemas.BenchChoice:
		err = mapChoice(&row, r)
	case schemas.BenchCode:
		err = mapCode(&row, r)
	case schemas.BenchFunctionCall:
		err = mapFunctionCall(&row, r, answers)
	}
	return row, err
}

func mapChoice(row *schemas.BenchItemRow, r record) error {
	var err error
	if row.ItemID, err = r.need("id", "id", "Record ID", "record_id"); err != nil {
		return err
	}
	if row.Question, err = r.need("question", "question", "Question"); err != nil {
		return err
	}
	var options []string
	if correct, ok := r.text("Correct Answer"); ok { // GPQA: the correct answer and three wrong ones
		options = append(options, strings.TrimSpace(correct))
		for i := 1; i <= 3; i++ {
			wrong, err := r.need("incorrect answer", fmt.Sprintf("Incorrect Answer %d", i))
			if err != nil {
				return err
			}
			options = append(options, strings.TrimSpace(wrong))
		}
		row.Answer = options[0]
	} else {
		list, ok := r.Fields["options"].([]any)
		if !ok {
			if s, isText := r.Fields["options"].(string); isText && json.Unmarshal([]byte(s), &list) == nil {
				ok = true
			}
		}
		if !ok || len(list) < 2 {
			return r.Fail("no options: want an \"options\" list of at least 2, or GPQA's \"Correct Answer\" and \"Incorrect Answer 1..3\"")
		}
		for i, o := range list {
			s, isText := o.(string)
			if !isText || strings.TrimSpace(s) == "" {
				return r.Fail("option %d is not a non-empty string", i+1)
			}
			options = append(options, strings.TrimSpace(s))
		}
		ans, err := r.need("answer", "answer")
		if err != nil {
			return err
		}
		ans = strings.TrimSpace(ans)
		if len(ans) == 1 && ans[0] >= 'A' && int(ans[0]-'A') < len(options) {
			row.Answer = options[ans[0]-'A']
		} else if idx := indexOf(options, ans); idx >= 0 {
			row.Answer = options[idx]
		} else {
			return r.Fail("answer %q is neither an option letter (A-%c) nor an option's text", ans, 'A'+len(options)-1)
		}
	}
	if len(options) > 26 {
		return r.Fail("%d options: at most 26", len(options))
	}
	seen := map[string]bool{}
	for _, o := range options {
		if seen[o] {
			return r.Fail("option %q appears twice", o)
		}
		seen[o] = true
	}
	b, _ := json.Marshal(options)
	row.Options = string(b)
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// CodeTest is one test case of a code item: stdin and expected stdout, or (functional) the arguments as
// JSON lines and the expected return value as JSON.
type CodeTest struct {
	Input    string `json:"input"`
	Output   string `json:"output"`
	TestType string `json:"testtype"`
}

// CodeTests are a code item's tests (bench_items.tests).
type CodeTests struct {
	Public  []CodeTest `json:"public"`
	Private []CodeTest `json:"private"`
}

// CodeMeta is a code item's bench_items.meta.
type CodeMeta struct {
	StarterCode string `json:"starter_code,omitempty"`
	FuncName    string `json:"func_name,omitempty"`
}

func mapCode(row *schemas.BenchItemRow, r record) error {
	var err error
	if row.ItemID, err = r.need("id", "question_id", "id"); err != nil {
		return err
	}
	if row.Question, err = r.need("question", "question_content", "question"); err != nil {
		return err
	}
	var tests CodeTests
	if tests.Public, err = decodeTests(r, "public_test_cases"); err != nil {
		return err
	}
	if tests.Private, err = decodeTests(r, "private_test_cases"); err != nil {
		return err
	}
	if len(tests.Public)+len(tests.Private) == 0 {
		return r.Fail("no tests: public_test_cases and private_test_cases are both empty")
	}
	var meta CodeMeta
	meta.StarterCode, _ = r.text("starter_code")
	switch m := r.Fields["metadata"].(type) {
	case string:
		var md map[string]any
		if json.Unmarshal([]byte(m), &md) == nil {
			meta.FuncName, _ = md["func_name"].(string)
		}
	case map[string]any:
		meta.FuncName, _ = m["func_name"].(string)
	}
	for _, t := range append(append([]CodeTest(nil), tests.Public...), tests.Private...) {
		if t.TestType == "functional" && meta.FuncName == "" {
			return r.Fail("functional tests need metadata.func_name (the method to call)")
		}
	}
	b, _ := json.Marshal(tests)
	row.Tests = string(b)
	mb, _ := json.Marshal(meta)
	row.Meta = string(mb)
	return nil
}

// decodeTests reads a test-case column: a list, JSON text of a list, or LiveCodeBench's
// base64(zlib(pickle(json text))) of one.
func decodeTests(r record, column string) ([]CodeTest, error) {
	v, ok := r.Fields[column]
	if !ok || v == nil {
		return nil, nil
	}
	var raw []byte
	switch x := v.(type) {
	case []any:
		raw, _ = json.Marshal(x)
	case string:
		raw = []byte(strings.TrimSpace(x))
		if len(raw) > 0 && raw[0] != '[' {
			decoded, err := unpackLCB(string(raw))
			if err != nil {
				return nil, r.Fail("%s: neither a JSON list nor base64/zlib/pickle text: %v", column, err)
			}
			raw = decoded
		}
	default:
		return nil, r.Fail("%s: want a list of {input, output, testtype}", column)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	var tests []CodeTest
	if err := json.Unmarshal(raw, &tests); err != nil {
		return nil, r.Fail("%s: not a list of {input, output, testtype}: %v", column, err)
	}
	for i := range tests {
		if tests[i].TestType == "" {
			tests[i].TestType = "stdin"
		}
		if tests[i].TestType != "stdin" && tests[i].TestType != "functional" {
			return nil, r.Fail("%s: test %d: testtype %q (want stdin or functional)", column, i+1, tests[i].TestType)
		}
	}
	return tests, nil
}

// unpackLCB decodes LiveCodeBench's packed private tests: base64 of zlib of a pickle of one str. Only a
// pickle holding a single string is accepted (read without unpickling anything else).
func unpackLCB(s string) ([]byte, error) {
	z, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	zr, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	p, err := io.ReadAll(io.LimitReader(zr, 512<<20))
	if err != nil {
		return nil, err
	}
	if len(p) > 0 && (p[0] == '[' || p[0] == '"') {
		return p, nil // zlib of the JSON text itself
	}
	// protocol >= 2: PROTO n [FRAME len8] then the string opcode
	i := 0
	if len(p) >= 2 && p[0] == 0x80 {
		i = 2
	}
	if i < len(p) && p[i] == 0x95 && len(p) >= i+9 {
		i += 9
	}
	if i >= len(p) {
		return nil, errors.New("empty pickle")
	}
	var n uint64
	switch p[i] {
	case 0x8c: // SHORT_BINUNICODE
		if len(p) < i+2 {
			return nil, errors.New("truncated pickle")
		}
		n, i = uint64(p[i+1]), i+2
	case 'X': // BINUNICODE
		if len(p) < i+5 {
			return nil, errors.New("truncated pickle")
		}
		n, i = uint64(binary.LittleEndian.Uint32(p[i+1:])), i+5
	case 0x8d: // BINUNICODE8
		if len(p) < i+9 {
			return nil, errors.New("truncated pickle")
		}
		n, i = binary.LittleEndian.Uint64(p[i+1:]), i+9
	default:
		return nil, fmt.Errorf("pickle holds something other than one string (opcode 0x%02x)", p[i])
	}
	if uint64(len(p)-i) < n {
		return nil, errors.New("truncated pickle")
	}
	return p[i : i+int(n)], nil
}

// FunctionMeta is a function_call item's bench_items.meta.
type FunctionMeta struct {
	// Category is BFCL's: simple, multiple, parallel or parallel_multiple (from the id's prefix or a
	// "category" field). Parallel categories compare the calls as a multiset; others expect one call.
	Category string `json:"category"`
}

func mapFunctionCall(row *schemas.BenchItemRow, r record, answers map[string]any) error {
	var err error
	if row.ItemID, err = r.need("id", "id"); err != nil {
		return err
	}
	switch q := r.Fields["question"].(type) {
	case string:
		row.Question = q
	case []any: // BFCL: [[{"role": "user", "content": "..."}]] (turns of messages)
		var parts []string
		var walk func(v any)
		walk = func(v any) {
			switch m := v.(type) {
			case []any:
				for _, e := range m {
					walk(e)
				}
			case map[string]any:
				if role, _ := m["role"].(string); role == "user" || role == "" {
					if c, ok := m["content"].(string); ok {
						parts = append(parts, c)
					}
				}
			}
		}
		walk(q)
		row.Question = strings.Join(parts, "\n")
	}
	if strings.TrimSpace(row.Question) == "" {
		return r.Fail("no question (a \"question\" text, or BFCL's [[{role, content}]])")
	}
	fns, ok := r.Fields["function"].([]any)
	if !ok {
		if f, isObj := r.Fields["function"].(map[string]any); isObj {
			fns, ok = []any{f}, true
		}
	}
	if !ok || len(fns) == 0 {
		return r.Fail("no \"function\" list of schemas")
	}
	for i, f := range fns {
		m, isObj := f.(map[string]any)
		if name, _ := m["name"].(string); !isObj || name == "" {
			return r.Fail("function %d has no name", i+1)
		}
	}
	fb, _ := json.Marshal(fns)
	row.Functions = string(fb)
	gt, ok := r.Fields["ground_truth"]
	if !ok {
		gt, ok = answers[row.ItemID]
	}
	if !ok {
		return r.Fail("no ground_truth for id %s (inline, or in a possible_answer file imported with it)", row.ItemID)
	}
	expected, err := parseGroundTruth(gt)
	if err != nil {
		return r.Fail("ground_truth: %v", err)
	}
	ab, _ := json.Marshal(expected)
	row.Answer = string(ab)
	cat, _ := r.text("category")
	if cat == "" {
		cat = categoryOf(row.ItemID)
	}
	mb, _ := json.Marshal(FunctionMeta{Category: cat})
	row.Meta = string(mb)
	return nil
}

// categoryOf reads BFCL's category from an id such as "parallel_multiple_12" or "live_simple_3-1-0".
func categoryOf(id string) string {
	id = strings.TrimPrefix(id, "live_")
	for _, c := range []string{"parallel_multiple", "parallel", "multiple", "simple"} {
		if strings.HasPrefix(id, c) {
			return c
		}
	}
	return "simple"
}
