package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/spadekit/spade/internal/inputfile"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// InputError is a problem with an input (a file that cannot be read, a wrong format, a missing column):
// the file and what is wrong, in one line. Nothing is imported; the CLI exits 2.
type InputError = inputfile.Error

// Program is one program read from the inputs, before the checks.
type Program struct {
	// ID is the program's id: the input's `id`, a .py file's name without the extension, or
	// FILE:LINE/FILE:ROW when the input has no id.
	ID string
	// Code, Hint and Skill are the input's `code`, `hint` (for a .py file: FILE.hint next to it) and
	// `skill`.
	Code, Hint, Skill string
	// Source is the input file.
	Source string
	// Format, Name, Validated and Meta are the pools columns of the same names (schemas.PoolRow).
	Format    schemas.PoolFormat
	Name      string
	Validated bool
	Meta      string
	// AllowedImports is the import allowlist the static check applies to the program: the pool's
	// (Spec.AllowedImports), set by Import.
	AllowedImports []string
	// Unusable, when set, says why the program could not be built from its input (an RLVE environment
	// whose source imports another RLVE module, say): it is listed as rejected without being checked.
	Unusable string
}

// Spec says what Import reads and where it stores it.
type Spec struct {
	// Name is the pool's name (sample.pool refers to it).
	Name string
	// Setting is games or tools: the checks every program must pass.
	Setting schemas.Setting
	// Format is the inputs' layout: files ("" too) takes .py files, directories of them, Parquet and
	// JSONL files; gpt55 and rlve take one directory each (readGPT55, readRLVE).
	Format schemas.PoolFormat
	// Inputs are the files and directories named on the command line.
	Inputs []string
	// AllowedImports is the pool's import allowlist for the static check (AllowedImports gives the
	// default for a format); it is recorded on every row the import adds.
	AllowedImports []string
	// RLVEEnvs picks the RLVE environments of an rlve import: official16, all, or a comma list of RLVE
	// identifiers ("" is official16).
	RLVEEnvs string
}

// Verdict is what a Checker says of one program: accepted (with its env class), or why not. Err means the
// program could not be judged (the sandbox failed), which fails the whole import.
type Verdict struct {
	Accepted bool
	Class    string
	// Contract is the shape of the program's step as the checks saw it (gate.Verdict.Contract).
	Contract schemas.EnvContract
	Reason   string
	// Refusal names why a refused program was refused in words shared by programs refused for the same
	// reason (gate.Verdict.RefusalReason), for Result.RefusalCounts; Reason when empty.
	Refusal string
	Err     error
}

// Checker runs the gate's checks on one program (the CLI passes stages/gate's Check on a sandbox pool).
type Checker func(ctx context.Context, p Program, setting schemas.Setting) Verdict

// Rejection is a program left out of the pool and why.
type Rejection struct {
	ID, Source, Reason string
	// Refusal is Reason in the words shared by programs refused for the same reason (Verdict.Refusal).
	Refusal string
}

// RefusalCount is how many programs of an import were refused for one reason.
type RefusalCount struct {
	Reason string
	Count  int
}

// RefusalCounts counts the rejected programs by Rejection.Refusal, most frequent first (ties in the
// reasons' order).
func (r Result) RefusalCounts() []RefusalCount {
	index := map[string]int{}
	var counts []RefusalCount
	for _, rej := range r.Rejected {
		reason := cmp.Or(rej.Refusal, rej.Reason)
		if i, ok := index[reason]; ok {
			counts[i].Count++
			continue
		}
		index[reason] = len(counts)
		counts = append(counts, RefusalCount{Reason: reason, Count: 1})
	}
	slices.SortStableFunc(counts, func(a, b RefusalCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
	})
	return counts
}

// RefusalSummary is the line that reports the rejected programs by reason: "refused N: 7 import of
// subprocess is not allowed, 3 validate: ..."; empty when none was rejected.
func (r Result) RefusalSummary() string {
	if len(r.Rejected) == 0 {
		return ""
	}
	parts := []string{}
	for _, c := range r.RefusalCounts() {
		parts = append(parts, fmt.Sprintf("%d %s", c.Count, c.Reason))
	}
	return fmt.Sprintf("refused %d: %s", len(r.Rejected), strings.Join(parts, ", "))
}

// Result reports an import.
type Result struct {
	// Imported counts programs added; Skipped counts duplicates (by id, of the input or of the pool);
	// Rejected lists the programs that failed a check (left out).
	Imported, Skipped int
	Rejected          []Rejection
	// Total is the pool's size after the import.
	Total int
}

// ErrNothingAccepted is returned when no program of the input passed the checks: nothing is committed.
var ErrNothingAccepted = errors.New("no program passed the gate's checks")

// Import reads every input of spec (by its format: Python files, directories of them, Parquet or JSONL
// files with `code` and optional `hint`, `skill`, `id`; the authors' GPT-5.5 pool directory; a checkout of
// RLVE's Gym package), checks every new program with check, and merges the accepted ones into the pool
// spec.Name, deduplicating by id. A bad input (a wrong checksum included) is an *InputError and commits
// nothing; a program that fails a check is reported in Result.Rejected and left out (the authors' static
// pools are of validated programs); when none passes, nothing is committed and the error is
// ErrNothingAccepted.
func Import(ctx context.Context, lk *lake.Lake, spec Spec, check Checker) (Result, error) {
	name, setting, inputs := spec.Name, spec.Setting, spec.Inputs
	if err := lake.ValidName(name); err != nil {
		return Result{}, &InputError{File: "--name", Problem: err.Error()}
	}
	if !setting.Valid() {
		return Result{}, &InputError{File: "--setting", Problem: fmt.Sprintf("must be games or tools, got %q", setting)}
	}
	if spec.Format == "" {
		spec.Format = schemas.PoolFiles
	}
	if !slices.Contains(schemas.PoolFormatValues(), spec.Format) {
		return Result{}, &InputError{File: "--format", Problem: fmt.Sprintf("must be %s, got %q", schemas.JoinValues(schemas.PoolFormatValues(), ", "), spec.Format)}
	}
	if len(spec.AllowedImports) == 0 {
		spec.AllowedImports = AllowedImports(spec.Format, nil)
	}
	var programs []Program
	switch spec.Format {
	case schemas.PoolFiles:
		if len(inputs) == 0 {
			return Result{}, &InputError{File: "(no inputs)", Problem: "name at least one .py file, directory of them, .parquet or .jsonl file"}
		}
		for _, in := range inputs {
			ps, err := readInput(ctx, in)
			if err != nil {
				return Result{}, err
			}
			programs = append(programs, ps...)
		}
	default:
		if len(inputs) != 1 {
			return Result{}, &InputError{File: "(inputs)", Problem: fmt.Sprintf("--format %s takes one directory, got %d inputs", spec.Format, len(inputs))}
		}
		var err error
		if spec.Format == schemas.PoolGPT55 {
			programs, err = readGPT55(ctx, inputs[0])
		} else {
			programs, err = readRLVE(inputs[0], spec.RLVEEnvs)
		}
		if err != nil {
			return Result{}, err
		}
	}
	key := lake.PoolKey(name)
	existing, err := lake.ReadRows[schemas.PoolRow](ctx, lk, key)
	if err != nil && !errors.Is(err, lake.ErrNotCommitted) {
		return Result{}, err
	}
	for _, r := range existing {
		if r.Setting != setting {
			return Result{}, &InputError{File: "--setting", Problem: fmt.Sprintf("pool %s holds %s programs; import %s programs into another pool", name, r.Setting, setting)}
		}
		if (r.Format == schemas.PoolRLVE) != (spec.Format == schemas.PoolRLVE) {
			return Result{}, &InputError{File: "--format", Problem: fmt.Sprintf("pool %s holds %s programs and RLVE environments cannot share a pool with others; import into another pool", name, cmp.Or(r.Format, schemas.PoolFiles))}
		}
	}
	seen := map[string]bool{}
	for _, r := range existing {
		seen[r.EntryID] = true
	}
	res := Result{}
	merged := existing
	for _, p := range programs {
		if seen[p.ID] {
			res.Skipped++
			continue
		}
		seen[p.ID] = true
		if p.Format == "" {
			p.Format = schemas.PoolFiles
		}
		p.AllowedImports = spec.AllowedImports
		if p.Unusable != "" {
			res.Rejected = append(res.Rejected, Rejection{ID: p.ID, Source: p.Source, Reason: p.Unusable, Refusal: unusableReason(p.Unusable)})
			continue
		}
		v := check(ctx, p, setting)
		if v.Err != nil {
			return Result{}, fmt.Errorf("pool import: %s (%s): the checks could not run: %w", p.ID, p.Source, v.Err)
		}
		if !v.Accepted {
			res.Rejected = append(res.Rejected, Rejection{ID: p.ID, Source: p.Source, Reason: v.Reason, Refusal: v.Refusal})
			continue
		}
		sum := sha256Hex(p.Code)
		merged = append(merged, schemas.PoolRow{EntryID: p.ID, Code: p.Code, Hint: p.Hint, Skill: p.Skill, Setting: setting,
			ClassName: v.Class, CodeSHA256: sum, Source: p.Source, Format: p.Format, Name: p.Name, Validated: p.Validated,
			Meta: p.Meta, AllowedImports: p.AllowedImports, Contract: v.Contract})
		res.Imported++
	}
	res.Total = len(merged)
	if res.Imported == 0 {
		if len(res.Rejected) > 0 {
			return res, ErrNothingAccepted
		}
		return res, nil
	}
	sort.SliceStable(merged, func(i, j int) bool { return merged[i].EntryID < merged[j].EntryID })
	txn := lake.TxnSpec{Corpus: key.Corpus, Stage: "pool-import", Force: len(existing) > 0}
	_, err = lake.CommitRows(ctx, lk, txn, key, merged, lake.WriteOptions{})
	return res, err
}

// RLVEImports are the modules RLVE's environments import beyond the sandbox's default allowlist: an rlve
// pool's allowlist adds them.
var RLVEImports = []string{"networkx", "array", "queue"}

// AllowedImports returns a pool's import allowlist: the sandbox's default list, RLVEImports for an rlve
// pool, and extra (`spade pool import --allow-import`), without repeats, in that order.
func AllowedImports(format schemas.PoolFormat, extra []string) []string {
	out := slices.Clone(sandbox.DefaultAllowedImports)
	if format == schemas.PoolRLVE {
		out = append(out, RLVEImports...)
	}
	for _, m := range append(slices.Clone(extra), nil...) {
		if m = strings.TrimSpace(m); m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// Read returns the imported pool `name`, or an error saying how to import it.
func Read(ctx context.Context, lk *lake.Lake, name string) ([]schemas.PoolRow, error) {
	rows, err := lake.ReadRows[schemas.PoolRow](ctx, lk, lake.PoolKey(name))
	if errors.Is(err, lake.ErrNotCommitted) {
		return nil, fmt.Errorf("pool %q is not imported in %s (run `%s DIR|FILE...`, or set sample.pool)", name, lk.URI(), lk.Command("pool", "import", "--name", name))
	}
	if err != nil {
		return nil, fmt.Errorf("read pool %q: %w", name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("pool %q is empty", name)
	}
	return rows, nil
}

// readInput reads one input: a directory (its .py files, sorted), a .py file, a .parquet or a .jsonl file.
func readInput(ctx context.Context, path string) ([]Program, error) {
	st, err := inputfile.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		matches, err := filepath.Glob(filepath.Join(path, "*.py"))
		if err != nil {
			return nil, &InputError{File: path, Problem: err.Error()}
		}
		if len(matches) == 0 {
			return nil, &InputError{File: path, Problem: "no .py files in the directory"}
		}
		slices.Sort(matches)
		var out []Program
		for _, m := range matches {
			ps, err := readInput(ctx, m)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
		return out, nil
	}
	if st.Size() == 0 {
		return nil, &InputError{File: path, Problem: "file is empty"}
	}
	var programs []Program
	switch {
	case strings.EqualFold(filepath.Ext(path), ".py"):
		programs, err = readPython(path)
	case inputfile.Supported(path):
		programs, err = readRecords(ctx, path)
	default:
		return nil, &InputError{File: path, Problem: fmt.Sprintf("unsupported format %q: want .py, a directory of them, or .parquet/.jsonl with a code column", filepath.Ext(path))}
	}
	if err != nil {
		return nil, err
	}
	if len(programs) == 0 {
		return nil, &InputError{File: path, Problem: "no programs in file"}
	}
	return programs, nil
}

// readPython reads one program file; FILE.hint next to it, when present, is its hint.
func readPython(path string) ([]Program, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{File: path, Problem: err.Error()}
	}
	if !utf8.Valid(body) {
		return nil, &InputError{File: path, Problem: "not valid UTF-8"}
	}
	p := Program{ID: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), Code: string(body), Source: path}
	if hint, err := os.ReadFile(strings.TrimSuffix(path, filepath.Ext(path)) + ".hint"); err == nil {
		p.Hint = strings.TrimSpace(string(hint))
	}
	return []Program{p}, checkProgram(path, "", p)
}

// checkProgram validates the fields a pool row takes from the input.
func checkProgram(path, where string, p Program) error {
	if where != "" {
		where += ": "
	}
	r := schemas.PoolRow{EntryID: p.ID, Code: p.Code, Hint: p.Hint, Skill: p.Skill, Setting: schemas.SettingGames, CodeSHA256: sha256Hex(p.Code)}
	if err := r.Validate(); err != nil {
		return &InputError{File: path, Problem: where + err.Error()}
	}
	return nil
}

// readRecords reads a .jsonl or .parquet file: `code`, optional `id` (a string or number; when absent,
// null or empty, FILE:LINE or FILE:ROW), `hint` and `skill`.
func readRecords(ctx context.Context, path string) ([]Program, error) {
	var out []Program
	need := inputfile.Need{Columns: []string{"code"}, Want: "want code, optional id, hint, skill"}
	for rec, err := range inputfile.Rows(ctx, path, need) {
		if err != nil {
			return nil, err
		}
		code, err := rec.String("code")
		if err != nil {
			return nil, err
		}
		p := Program{Code: code, Source: path, ID: fmt.Sprintf("%s:%d", filepath.Base(path), rec.N)}
		if id, ok := rec.Text("id"); ok && id != "" {
			p.ID = id
		}
		p.Hint, _ = rec.Fields["hint"].(string)
		p.Skill, _ = rec.Fields["skill"].(string)
		if err := checkProgram(path, rec.Where, p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// unusableReason is the refusal reason of a program that could not be carried (Program.Unusable): its
// first clause, before any colon that names the program's own details.
func unusableReason(unusable string) string {
	head, _, _ := strings.Cut(unusable, ":")
	return "not carried: " + strings.TrimSpace(head)
}
