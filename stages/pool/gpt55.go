package pool

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spadekit/spade/internal/inputfile"
	"github.com/spadekit/spade/schemas"
)

// The files of the authors' static GPT-5.5 pool, as their download script (cmd/games/_download_gpt55_pool.sh)
// lays them out under the dataset's root.
const (
	gpt55Games      = "games"
	gpt55Manifest   = "manifest.jsonl"
	gpt55Validation = "validation_manifest.jsonl"
	gpt55Summary    = "validation_summary.json"
	gpt55Checksums  = "checksums.sha256"
)

// checksumLine is one line of a sha256sum file: the hex digest, a space, a space or '*' (binary mode), the
// path.
var checksumLine = regexp.MustCompile(`^([0-9a-fA-F]{64}) [ *](.+)$`)

// readGPT55 reads the authors' static pool under dir: every file checksums.sha256 lists is verified
// first (and every games/game_*.py must be listed), then each game takes its skill, name and metadata
// from manifest.jsonl and its validated flag from validation_manifest.jsonl. Any problem is an
// *InputError naming the file; nothing is read into the pool until everything is.
func readGPT55(ctx context.Context, dir string) ([]Program, error) {
	st, err := inputfile.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &InputError{File: dir, Problem: "--format gpt55 takes the dataset's directory (games/, manifest.jsonl, validation_manifest.jsonl, validation_summary.json, checksums.sha256)"}
	}
	for _, name := range []string{gpt55Checksums, gpt55Manifest, gpt55Validation, gpt55Summary} {
		if err := inputfile.Check(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	listed, err := verifyChecksums(dir)
	if err != nil {
		return nil, err
	}
	games, err := filepath.Glob(filepath.Join(dir, gpt55Games, "game_*.py"))
	if err != nil || len(games) == 0 {
		return nil, &InputError{File: filepath.Join(dir, gpt55Games), Problem: "no game_*.py files"}
	}
	slices.Sort(games)
	for _, g := range games {
		if !listed[filepath.Clean(g)] {
			return nil, &InputError{File: g, Problem: "not listed in " + gpt55Checksums + ", so it cannot be verified"}
		}
	}
	if err := checkSummary(filepath.Join(dir, gpt55Summary)); err != nil {
		return nil, err
	}
	manifest, err := gameRecords(ctx, filepath.Join(dir, gpt55Manifest))
	if err != nil {
		return nil, err
	}
	validation, err := gameRecords(ctx, filepath.Join(dir, gpt55Validation))
	if err != nil {
		return nil, err
	}
	out := make([]Program, 0, len(games))
	for _, g := range games {
		file := filepath.Base(g)
		entry, ok := manifest[file]
		if !ok {
			return nil, &InputError{File: filepath.Join(dir, gpt55Manifest), Problem: fmt.Sprintf("no entry for %s (by file_name or game_id)", file)}
		}
		p, err := gpt55Program(g, entry.fields, validation[file].fields)
		if err != nil {
			return nil, &InputError{File: filepath.Join(dir, gpt55Manifest), Problem: entry.where + ": " + err.Error()}
		}
		if err := checkProgram(g, "", p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	for file, entry := range manifest {
		if !slices.ContainsFunc(games, func(g string) bool { return filepath.Base(g) == file }) {
			return nil, &InputError{File: filepath.Join(dir, gpt55Manifest), Problem: fmt.Sprintf("%s: %s is not in %s/", entry.where, file, gpt55Games)}
		}
	}
	return out, nil
}

// gpt55Program builds one game's Program from its file and its manifest and validation entries.
func gpt55Program(path string, entry, validation map[string]any) (Program, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return Program{}, err
	}
	if !utf8.Valid(body) {
		return Program{}, fmt.Errorf("%s is not valid UTF-8", filepath.Base(path))
	}
	p := Program{ID: strings.TrimSuffix(filepath.Base(path), ".py"), Code: string(body), Source: path,
		Format: schemas.PoolGPT55, Validated: validatedFlag(validation)}
	if skill, ok := entry["skill"].(string); ok && skill != "" {
		if p.Skill, ok = gpt55Skill(skill); !ok {
			return Program{}, fmt.Errorf("skill %q is none of the six games skills", skill)
		}
	}
	for _, key := range []string{"original_file_name", "game_id", "name"} {
		if name, ok := entry[key].(string); ok && name != "" {
			p.Name = name
			break
		}
	}
	meta := map[string]any{}
	for k, v := range entry {
		if k != "code" { // the program itself is the row's code
			meta[k] = v
		}
	}
	text, err := json.Marshal(meta)
	if err != nil {
		return Program{}, err
	}
	p.Meta = string(text)
	return p, nil
}

// verifyChecksums checks every file checksums.sha256 lists (paths relative to dir, never outside it) and
// returns the set of listed paths.
func verifyChecksums(dir string) (map[string]bool, error) {
	sumsPath := filepath.Join(dir, gpt55Checksums)
	body, err := os.ReadFile(sumsPath)
	if err != nil {
		return nil, &InputError{File: sumsPath, Problem: "cannot read: " + err.Error()}
	}
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		m := checksumLine.FindStringSubmatch(line)
		if m == nil {
			return nil, &InputError{File: sumsPath, Problem: fmt.Sprintf("line %d: not a sha256sum line (HEX  PATH)", n)}
		}
		rel := filepath.Clean(strings.TrimPrefix(m[2], "./"))
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, &InputError{File: sumsPath, Problem: fmt.Sprintf("line %d: %s is outside the dataset's directory", n, m[2])}
		}
		path := filepath.Join(dir, rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, &InputError{File: path, Problem: fmt.Sprintf("listed in %s (line %d) but cannot be read: %v", gpt55Checksums, n, errorsCause(err))}
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != strings.ToLower(m[1]) {
			return nil, &InputError{File: path, Problem: fmt.Sprintf("sha256 is %s but %s (line %d) says %s: the file is corrupt or was changed", got, gpt55Checksums, n, strings.ToLower(m[1]))}
		}
		listed[filepath.Clean(path)] = true
	}
	if err := sc.Err(); err != nil {
		return nil, &InputError{File: sumsPath, Problem: err.Error()}
	}
	if len(listed) == 0 {
		return nil, &InputError{File: sumsPath, Problem: "lists no files"}
	}
	return listed, nil
}

// errorsCause is an os error's reason without the operation and path it repeats.
func errorsCause(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// checkSummary checks that the validation summary is a JSON object.
func checkSummary(path string) error {
	body, err := os.ReadFile(path)
	if err != nil {
		return &InputError{File: path, Problem: "cannot read: " + errorsCause(err).Error()}
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		return &InputError{File: path, Problem: "not a JSON object: " + err.Error()}
	}
	return nil
}

// gameRecord is one manifest line's fields and where it is.
type gameRecord struct {
	fields map[string]any
	where  string
}

// gameRecords reads a JSONL manifest into records keyed by game file name: the entry's file_name, else
// its game_id with ".py".
func gameRecords(ctx context.Context, path string) (map[string]gameRecord, error) {
	out := map[string]gameRecord{}
	for rec, err := range inputfile.Rows(ctx, path, inputfile.Need{Want: "want one object per game with file_name or game_id"}) {
		if err != nil {
			return nil, err
		}
		file, _ := rec.Text("file_name")
		if file == "" {
			if id, ok := rec.Text("game_id"); ok && id != "" {
				file = id + ".py"
			}
		}
		if file == "" {
			return nil, rec.Fail("no file_name or game_id")
		}
		file = filepath.Base(file)
		if _, dup := out[file]; dup {
			return nil, rec.Fail("%s is listed twice", file)
		}
		out[file] = gameRecord{fields: rec.Fields, where: rec.Where}
	}
	return out, nil
}

// validatedFlag reads a validation manifest entry: a true `valid`, `validated`, `passed` or `ok`, or a
// `status` of valid, validated, passed, pass or ok. A missing entry is not validated.
func validatedFlag(entry map[string]any) bool {
	for _, key := range []string{"valid", "validated", "passed", "ok"} {
		if b, ok := entry[key].(bool); ok {
			return b
		}
	}
	if s, ok := entry["status"].(string); ok {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "valid", "validated", "passed", "pass", "ok":
			return true
		}
	}
	return false
}

// gpt55Skill maps a skill as the authors write it (Mathematical_Reasoning, "Logical Deduction",
// pattern_recognition, ...) to spade's skill name.
func gpt55Skill(skill string) (string, bool) {
	key := strings.ToLower(strings.NewReplacer(" ", "_", "-", "_").Replace(strings.TrimSpace(skill)))
	switch key {
	case "mathematical_reasoning", "math_reasoning", "math", "mathematics":
		return schemas.SkillMath, true
	case "logical_deduction", "logic":
		return schemas.SkillLogic, true
	case "spatial_reasoning", "spatial":
		return schemas.SkillSpatial, true
	case "pattern_recognition", "pattern":
		return schemas.SkillPattern, true
	case "optimization", "optimisation":
		return schemas.SkillOptimize, true
	case "causal_inference", "causal":
		return schemas.SkillCausal, true
	}
	return "", false
}
