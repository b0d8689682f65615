// Package harness reads the result files that the official harnesses of the paper's downstream
// benchmarks write (SPADE §4, Tables 1-3) and turns them into eval_results rows, one per item and sample
// with the suite's own score, so `spade ablate --table` can put them beside what `spade eval` scored.
//
// The formats (docs/evaluation.md, "Official harnesses"; testdata/harness/README.md cites each
// harness's source):
//
//   - bfcl: the Berkeley Function Calling Leaderboard (bfcl_eval). Per category a score file
//     BFCL_v4_<category>_score.json (JSON lines: a summary {accuracy, correct_count, total_count}, then
//     one line per failed entry with its id) and a result file BFCL_v4_<category>_result.json (one line
//     per entry with its id). Bench bfcl_v4_<category>, score 1 unless the entry failed.
//   - tau2: τ²-bench's results JSON ({info: {environment_info: {domain_name}}, simulations: [{task_id,
//     trial, termination_reason, reward_info: {reward}}]}, or the directory format's simulation_index).
//     Bench tau2_<domain>, one sample per trial, score 1 for a success (reward within 1e-6 of 1, tau2's
//     rule), else the reward; simulations that never produced an evaluable rollout (infrastructure_error,
//     context_window_exceeded) are left out, as tau2 leaves them out of its metrics.
//   - acebench: ACEBench's agent score files data_agent_<category>_score.json (JSON lines: a summary
//     {end_to_end_accuracy, correct_count, total_count}, then one line per failed entry with its index).
//     Bench acebench_agent_<category>; the other categories' files are counted and skipped.
//   - lcb: LiveCodeBench's lcb_runner *_eval_all.json (a list of problems, each with question_id and
//     graded_list, one boolean per sample). Bench livecodebench_v6, one sample per graded generation.
//   - reasoning-gym: Reasoning Gym's eval script, one JSON per dataset ({name, category, results: [...]},
//     each result with score, or completions with a score each). Bench reasoning_gym_<category>.
//
// Every problem with an input is an *inputfile.Error naming the file, in one line; Import reads
// everything before it writes and commits one partition, so a bad file leaves the lake as it was.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spadekit/spade/internal/inputfile"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// InputError is a problem with the results folder, a file in it or a flag, in one line (the CLI maps
// it to exit code 2).
type InputError = inputfile.Error

// Format names one harness's result layout (`spade eval import --format`).
type Format string

// The formats Import reads.
const (
	// BFCL is the Berkeley Function Calling Leaderboard's score and result files.
	BFCL Format = "bfcl"
	// Tau2 is τ²-bench's results JSON.
	Tau2 Format = "tau2"
	// ACEBench is ACEBench's agent score files.
	ACEBench Format = "acebench"
	// LCB is LiveCodeBench's lcb_runner evaluation file.
	LCB Format = "lcb"
	// ReasoningGym is Reasoning Gym's eval script output.
	ReasoningGym Format = "reasoning-gym"
)

// reader reads one harness's results below dir as rows without step and weights version, plus a note
// on what it skipped ("" when nothing).
type reader func(dir string) (rows []schemas.EvalResultRow, skipped string, err error)

// readers holds every format's reader, keyed by the format.
var readers = map[Format]reader{BFCL: readBFCL, Tau2: readTau2, ACEBench: readACEBench, LCB: readLCB,
	ReasoningGym: readReasoningGym}

// Formats lists every format, in the order the help shows them.
func Formats() []Format { return []Format{BFCL, Tau2, ACEBench, LCB, ReasoningGym} }

// ParseFormat returns the format named s, or an *inputfile.Error naming the flag.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", &inputfile.Error{File: "--format", Problem: fmt.Sprintf("unknown format %q: want %s", s, schemas.JoinValues(Formats(), ", "))}
}

// Read reads the results a harness of the given format wrote below dir, sorted by bench, item and
// sample, each row validated. skipped says what was passed over (files of categories no table reads).
func Read(format Format, dir string) (rows []schemas.EvalResultRow, skipped string, err error) {
	read, ok := readers[format]
	if !ok {
		_, err := ParseFormat(string(format))
		return nil, "", err
	}
	st, err := inputfile.Stat(dir)
	if err != nil {
		return nil, "", err
	}
	if !st.IsDir() {
		return nil, "", &inputfile.Error{File: dir, Problem: "is a file; name the folder the harness wrote its results to"}
	}
	rows, skipped, err = read(dir)
	if err != nil {
		return nil, "", err
	}
	if len(rows) == 0 {
		return nil, "", &inputfile.Error{File: dir, Problem: fmt.Sprintf("no %s results found (%s)", format, wants[format])}
	}
	seen := map[[2]string]map[int32]bool{}
	for i := range rows {
		rows[i].Kind = schemas.BenchExternal
		r := rows[i]
		if err := r.Validate(); err != nil {
			return nil, "", &inputfile.Error{File: dir, Problem: err.Error()}
		}
		key := [2]string{r.Bench, r.ItemID}
		if seen[key] == nil {
			seen[key] = map[int32]bool{}
		}
		if seen[key][r.Sample] {
			return nil, "", &inputfile.Error{File: dir, Problem: fmt.Sprintf("%s item %s sample %d appears twice: name the folder of one evaluation", r.Bench, r.ItemID, r.Sample)}
		}
		seen[key][r.Sample] = true
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Bench != b.Bench {
			return a.Bench < b.Bench
		}
		if a.ItemID != b.ItemID {
			return a.ItemID < b.ItemID
		}
		return a.Sample < b.Sample
	})
	return rows, skipped, nil
}

// wants says, per format, which files the reader looks for (in the "nothing found" message).
var wants = map[Format]string{
	BFCL:         "want BFCL_v4_<category>_score.json and BFCL_v4_<category>_result.json files: the bfcl project root with score/ and result/",
	Tau2:         "want a τ²-bench results JSON with info and simulations: tau2's data/simulations folder",
	ACEBench:     "want data_agent_multi_step_score.json or data_agent_multi_turn_score.json: ACEBench's score_all/score_en/<model> folder",
	LCB:          "want lcb_runner's *_eval_all.json: its output/<model> folder",
	ReasoningGym: "want one JSON per dataset with name, category and results: the eval script's output folder",
}

// Options says what Import imports where.
type Options struct {
	// Run and Step are where the rows go (eval_results of the run at the step).
	Run  string
	Step int64
	// Weights is the weights version the harness evaluated (the step's, stage.WeightsVersion).
	Weights string
	// Format and Dir name the harness and the folder its results are in.
	Format Format
	Dir    string
	// Force replaces a committed import of the same format at the step; without it that is an error.
	Force bool
}

// BenchSummary is what an import holds of one benchmark.
type BenchSummary struct {
	Bench          string
	Items, Samples int
	// Mean is the mean score over every imported sample.
	Mean float64
}

// Result reports an import.
type Result struct {
	// Benches are the imported benchmarks, by name.
	Benches []BenchSummary
	// Skipped says what the reader passed over ("" when nothing).
	Skipped string
	// Replaced is set when a committed import was replaced (Force).
	Replaced bool
}

// Import reads o.Dir as o.Format and commits the rows, tagged with o.Step and o.Weights, as the
// fragment schemas.ImportFragment(o.Format) of eval_results: one partition, visible whole or not at all.
// A format already imported at the step is refused (an *inputfile.Error naming --force) unless o.Force,
// which replaces the previous import whole (its benchmarks absent from the new one go with it).
func Import(ctx context.Context, lk *lake.Lake, o Options) (Result, error) {
	rows, skipped, err := Read(o.Format, o.Dir)
	if err != nil {
		return Result{}, err
	}
	key := lake.PartitionKey{Run: o.Run, Table: schemas.EvalResultsSpec.Name, Step: o.Step, Fragment: schemas.ImportFragment(string(o.Format))}
	committed, err := lk.Committed(ctx, key)
	if err != nil {
		return Result{}, err
	}
	if committed && !o.Force {
		return Result{}, &inputfile.Error{File: o.Dir, Problem: fmt.Sprintf("run %s already holds %s results at step %d; pass --force to replace them (the whole %s import of that step)",
			o.Run, o.Format, o.Step, o.Format)}
	}
	res := Result{Skipped: skipped, Replaced: committed}
	for i := range rows {
		rows[i].Step, rows[i].WeightsVersion = o.Step, o.Weights
		n := len(res.Benches)
		if n == 0 || res.Benches[n-1].Bench != rows[i].Bench {
			res.Benches = append(res.Benches, BenchSummary{Bench: rows[i].Bench})
			n++
		}
		b := &res.Benches[n-1]
		if rows[i].Sample == 0 {
			b.Items++
		}
		b.Samples++
		b.Mean += rows[i].Score
	}
	for i := range res.Benches {
		res.Benches[i].Mean /= float64(res.Benches[i].Samples)
	}
	spec := lake.TxnSpec{Run: o.Run, Stage: "eval-import-" + string(o.Format), Step: o.Step, Force: committed}
	if _, err := lake.CommitRows(ctx, lk, spec, key, rows, lake.WriteOptions{}); err != nil {
		return Result{}, err
	}
	return res, nil
}

// findFiles returns every regular file below dir whose base name matches, sorted by path.
func findFiles(dir string, match func(name string) bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return &inputfile.Error{File: path, Problem: "cannot read: " + err.Error()}
		}
		if d.Type().IsRegular() && match(d.Name()) {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// jsonLines decodes a file of JSON objects, one a line (blank lines skipped), keeping numbers as
// json.Number; an empty file or a bad line is an *inputfile.Error.
func jsonLines(path string) ([]inputfile.Record, error) {
	if err := inputfile.Check(path); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &inputfile.Error{File: path, Problem: "cannot read: " + err.Error()}
	}
	var recs []inputfile.Record
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		fields, err := decodeObject([]byte(line))
		if err != nil {
			return nil, &inputfile.Error{File: path, Problem: fmt.Sprintf("line %d: not a JSON object: %v", i+1, err)}
		}
		recs = append(recs, inputfile.Record{File: path, Where: fmt.Sprintf("line %d", i+1), N: i + 1, Fields: fields})
	}
	if len(recs) == 0 {
		return nil, &inputfile.Error{File: path, Problem: "no JSON lines in file"}
	}
	return recs, nil
}

// jsonFile decodes a whole file as one JSON value, keeping numbers as json.Number.
func jsonFile(path string) (any, error) {
	if err := inputfile.Check(path); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &inputfile.Error{File: path, Problem: "cannot read: " + err.Error()}
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &inputfile.Error{File: path, Problem: "not valid JSON: " + err.Error()}
	}
	return v, nil
}

func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null")
	}
	return m, nil
}

// number returns v as a float64 when it is a JSON number.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// count returns v as a non-negative integer when it is a whole JSON number.
func count(v any) (int, bool) {
	f, ok := number(v)
	if !ok || f < 0 || f != math.Trunc(f) || f > 1e12 {
		return 0, false
	}
	return int(f), true
}

// idText returns an id field (a string or a number) as text.
func idText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != ""
	case json.Number:
		return x.String(), true
	}
	return "", false
}

// oneLine shortens a detail to one line of at most 200 bytes (cut at a rune boundary).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= 200 {
		return s
	}
	cut := 200
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

var nonName = regexp.MustCompile(`[^a-z0-9_]+`)

// benchPart turns a harness's category or domain name into a part of a bench name: lower case,
// letters, digits and '_' only.
func benchPart(s string) string {
	return strings.Trim(nonName.ReplaceAllString(strings.ToLower(strings.TrimSpace(s)), "_"), "_")
}

// firstError is the one-line reason of a failed entry: its error_type, then its first error message.
func firstError(fields map[string]any) string {
	var parts []string
	if t, ok := fields["error_type"].(string); ok && t != "" {
		parts = append(parts, t)
	}
	var walk func(v any) string
	walk = func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case []any:
			for _, e := range x {
				if s := walk(e); s != "" {
					return s
				}
			}
		case map[string]any:
			if t, ok := x["error_type"].(string); ok && len(parts) == 0 {
				parts = append(parts, t)
			}
			if m, ok := x["error_message"]; ok {
				return walk(m)
			}
		}
		return ""
	}
	if msg := walk(fields["error"]); msg != "" {
		parts = append(parts, msg)
	}
	if len(parts) == 0 {
		return "failed"
	}
	return oneLine(strings.Join(parts, ": "))
}
