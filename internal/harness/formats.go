package harness

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spadekit/spade/internal/inputfile"
	"github.com/spadekit/spade/schemas"
)

// bfclFile matches BFCL's per-category files: BFCL_v<version>_<category>_<score|result>.json.
var bfclFile = regexp.MustCompile(`^BFCL_v(\d+)_(.+)_(score|result)\.json$`)

// readBFCL pairs every score file with the result file of its category: the result file lists every
// entry, the score file the failed ones (after its summary line), so an entry scores 1 unless it failed.
// The counts must agree with the summary (total_count entries, correct_count of them not failed).
func readBFCL(dir string) ([]schemas.EvalResultRow, string, error) {
	files, err := findFiles(dir, bfclFile.MatchString)
	if err != nil {
		return nil, "", err
	}
	type pair struct{ score, result string }
	byBench := map[string]*pair{}
	var benches []string
	for _, f := range files {
		m := bfclFile.FindStringSubmatch(filepath.Base(f))
		bench := "bfcl_v" + m[1] + "_" + benchPart(m[2])
		p := byBench[bench]
		if p == nil {
			p = &pair{}
			byBench[bench] = p
			benches = append(benches, bench)
		}
		slot := &p.score
		if m[3] == "result" {
			slot = &p.result
		}
		if *slot != "" {
			return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("a second %s file of %s (the first is %s): name the folder of one model's evaluation", m[3], bench, *slot)}
		}
		*slot = f
	}
	var rows []schemas.EvalResultRow
	var unscored []string
	for _, bench := range benches {
		p := byBench[bench]
		if p.score == "" {
			unscored = append(unscored, bench)
			continue
		}
		if p.result == "" {
			return nil, "", &inputfile.Error{File: p.score, Problem: "no result file of its category beside the score files: name the bfcl project root (it holds result/ and score/), whose result file lists the entries that passed"}
		}
		scoreLines, err := jsonLines(p.score)
		if err != nil {
			return nil, "", err
		}
		summary := scoreLines[0]
		total, okTotal := count(summary.Fields["total_count"])
		correct, okCorrect := count(summary.Fields["correct_count"])
		if !okTotal || !okCorrect {
			return nil, "", summary.Fail("not BFCL's summary line: want total_count and correct_count")
		}
		failed := map[string]string{}
		for _, l := range scoreLines[1:] {
			id, ok := idText(l.Fields["id"])
			if !ok {
				return nil, "", l.Fail("a failed entry without an id")
			}
			failed[id] = firstError(l.Fields)
		}
		resultLines, err := jsonLines(p.result)
		if err != nil {
			return nil, "", err
		}
		if len(resultLines) != total {
			return nil, "", &inputfile.Error{File: p.result, Problem: fmt.Sprintf("%d entries, but the score file's summary counts %d: the two files come from different runs", len(resultLines), total)}
		}
		seen := map[string]bool{}
		for _, l := range resultLines {
			id, ok := idText(l.Fields["id"])
			if !ok {
				return nil, "", l.Fail("an entry without an id")
			}
			if seen[id] {
				return nil, "", l.Fail("entry %s appears twice", id)
			}
			seen[id] = true
			row := schemas.EvalResultRow{Bench: bench, ItemID: id, Score: 1, Detail: "passed (bfcl_eval)"}
			if reason, bad := failed[id]; bad {
				row.Score, row.Detail = 0, reason
			}
			rows = append(rows, row)
		}
		for id := range failed {
			if !seen[id] {
				return nil, "", &inputfile.Error{File: p.score, Problem: fmt.Sprintf("failed entry %s is not in %s: the two files come from different runs", id, filepath.Base(p.result))}
			}
		}
		if total-len(failed) != correct {
			return nil, "", &inputfile.Error{File: p.score, Problem: fmt.Sprintf("summary says %d of %d correct, but %d entries are listed as failed", correct, total, len(failed))}
		}
	}
	skipped := ""
	if len(unscored) > 0 {
		skipped = "result files without a score file (run `bfcl evaluate`): " + strings.Join(unscored, ", ")
	}
	return rows, skipped, nil
}

// tau2NonEvaluable are the termination reasons of simulations tau2 leaves out of its metrics (they
// failed before or during execution instead of completing).
var tau2NonEvaluable = map[string]bool{"infrastructure_error": true, "context_window_exceeded": true}

// readTau2 reads every τ²-bench results JSON below dir (an object with info and simulations, or the
// directory format's results.json with simulation_index); other JSON files (the directory format's
// per-simulation files) are passed over.
func readTau2(dir string) ([]schemas.EvalResultRow, string, error) {
	files, err := findFiles(dir, func(name string) bool { return strings.HasSuffix(name, ".json") })
	if err != nil {
		return nil, "", err
	}
	var rows []schemas.EvalResultRow
	left := 0
	for _, f := range files {
		v, err := jsonFile(f)
		if err != nil {
			return nil, "", err
		}
		obj, _ := v.(map[string]any)
		info, hasInfo := obj["info"].(map[string]any)
		sims, hasSims := obj["simulations"].([]any)
		if index, ok := obj["simulation_index"].([]any); ok && (!hasSims || len(sims) == 0) {
			sims, hasSims = index, true
		}
		if !hasInfo || !hasSims {
			continue
		}
		envInfo, _ := info["environment_info"].(map[string]any)
		domain, _ := envInfo["domain_name"].(string)
		if benchPart(domain) == "" {
			return nil, "", &inputfile.Error{File: f, Problem: "no info.environment_info.domain_name: not a τ²-bench results file"}
		}
		bench := "tau2_" + benchPart(domain)
		trials := map[string]int32{}
		for i, s := range sims {
			sim, _ := s.(map[string]any)
			where := fmt.Sprintf("simulations[%d]", i)
			task, ok := idText(sim["task_id"])
			if !ok {
				return nil, "", &inputfile.Error{File: f, Problem: where + ": no task_id"}
			}
			reason, _ := sim["termination_reason"].(string)
			if tau2NonEvaluable[reason] {
				left++
				continue
			}
			reward, ok := number(sim["reward"]) // simulation_index entries
			if ri, isObj := sim["reward_info"].(map[string]any); isObj {
				reward, ok = number(ri["reward"])
			}
			if !ok {
				return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("%s (task %s): no reward_info.reward: the simulation was not evaluated", where, task)}
			}
			if reward < -1e-6 || reward > 1+1e-6 {
				return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("%s (task %s): reward %v is outside [0, 1]", where, task, reward)}
			}
			trial := trials[task]
			if t, has := sim["trial"]; has && t != nil {
				n, ok := count(t)
				if !ok {
					return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("%s (task %s): trial is not a whole number", where, task)}
				}
				trial = int32(n)
			}
			trials[task] = trial + 1
			score := math.Min(1, math.Max(0, reward))
			if math.Abs(reward-1) <= 1e-6 {
				score = 1
			}
			rows = append(rows, schemas.EvalResultRow{Bench: bench, ItemID: task, Sample: trial, Score: score,
				Detail: oneLine(fmt.Sprintf("reward %g, %s", reward, reasonOr(reason)))})
		}
	}
	skipped := ""
	if left > 0 {
		skipped = fmt.Sprintf("%d simulations that never produced an evaluable rollout (infrastructure_error, context_window_exceeded), as tau2's metrics leave them out", left)
	}
	return rows, skipped, nil
}

func reasonOr(reason string) string {
	if reason == "" {
		return "no termination reason"
	}
	return reason
}

// aceScoreFile matches ACEBench's per-category score files: data_<category>_score.json.
var aceScoreFile = regexp.MustCompile(`^data_(.+)_score\.json$`)

// readACEBench reads the agent categories' score files: after the summary line, one line per failed
// entry, whose id is the entry's index in the category, so entries 0 .. total_count-1 not listed scored 1
// (ACEBench's end-to-end accuracy). Score files of the other categories are counted and skipped: their
// passing entries are named only in the data files.
func readACEBench(dir string) ([]schemas.EvalResultRow, string, error) {
	files, err := findFiles(dir, aceScoreFile.MatchString)
	if err != nil {
		return nil, "", err
	}
	var rows []schemas.EvalResultRow
	var others []string
	where := map[string]string{}
	for _, f := range files {
		category := aceScoreFile.FindStringSubmatch(filepath.Base(f))[1]
		if !strings.HasPrefix(category, "agent_") {
			others = append(others, category)
			continue
		}
		bench := "acebench_" + benchPart(category)
		if first, dup := where[bench]; dup {
			return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("a second score file of %s (the first is %s): name one model's score_all/score_en/<model> folder", category, first)}
		}
		where[bench] = f
		lines, err := jsonLines(f)
		if err != nil {
			return nil, "", err
		}
		summary := lines[0]
		total, okTotal := count(summary.Fields["total_count"])
		correct, okCorrect := count(summary.Fields["correct_count"])
		if _, ok := number(summary.Fields["end_to_end_accuracy"]); !ok || !okTotal || !okCorrect {
			return nil, "", summary.Fail("not ACEBench's agent summary line: want end_to_end_accuracy, correct_count and total_count")
		}
		failed := map[int]string{}
		for _, l := range lines[1:] {
			i, ok := count(l.Fields["id"])
			if !ok || i >= total {
				return nil, "", l.Fail("a failed entry whose id is not an index below total_count %d", total)
			}
			if _, dup := failed[i]; dup {
				return nil, "", l.Fail("entry %d is listed twice", i)
			}
			failed[i] = firstError(l.Fields)
		}
		if total-len(failed) != correct {
			return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("summary says %d of %d correct, but %d entries are listed as failed", correct, total, len(failed))}
		}
		for i := 0; i < total; i++ {
			row := schemas.EvalResultRow{Bench: bench, ItemID: fmt.Sprintf("%s_%d", category, i), Score: 1, Detail: "end-to-end correct (ACEBench)"}
			if reason, bad := failed[i]; bad {
				row.Score, row.Detail = 0, reason
			}
			rows = append(rows, row)
		}
	}
	skipped := ""
	if len(others) > 0 {
		sort.Strings(others)
		skipped = fmt.Sprintf("%d score files of categories other than agent (no table reads them): %s", len(others), strings.Join(others, ", "))
	}
	return rows, skipped, nil
}

// readLCB reads lcb_runner's *_eval_all.json: one item per problem, one sample per graded generation
// (1 when every test passed). A problem's pass@1, when present, must be its graded_list's mean.
func readLCB(dir string) ([]schemas.EvalResultRow, string, error) {
	files, err := findFiles(dir, func(name string) bool { return strings.HasSuffix(name, "_eval_all.json") })
	if err != nil {
		return nil, "", err
	}
	if len(files) > 1 {
		return nil, "", &inputfile.Error{File: dir, Problem: fmt.Sprintf("%d lcb_runner evaluations (%s, ...): name the folder of one, or the file's own folder", len(files), files[0])}
	}
	var rows []schemas.EvalResultRow
	for _, f := range files {
		v, err := jsonFile(f)
		if err != nil {
			return nil, "", err
		}
		problems, ok := v.([]any)
		if !ok {
			return nil, "", &inputfile.Error{File: f, Problem: "not a list of problems (lcb_runner's *_eval_all.json)"}
		}
		for i, p := range problems {
			prob, _ := p.(map[string]any)
			where := fmt.Sprintf("problem %d", i+1)
			id, ok := idText(prob["question_id"])
			if !ok {
				return nil, "", &inputfile.Error{File: f, Problem: where + ": no question_id"}
			}
			graded, ok := prob["graded_list"].([]any)
			if !ok || len(graded) == 0 {
				return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("%s (%s): no graded_list (run lcb_runner with --evaluate)", where, id)}
			}
			codes, _ := prob["code_list"].([]any)
			passed := 0
			for s, g := range graded {
				ok, isBool := g.(bool)
				if !isBool {
					return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("%s (%s): graded_list[%d] is not true or false", where, id, s)}
				}
				row := schemas.EvalResultRow{Bench: "livecodebench_v6", ItemID: id, Sample: int32(s), Detail: "a test failed (lcb_runner)"}
				if ok {
					row.Score, row.Detail = 1, "every test passed (lcb_runner)"
					passed++
				}
				if s < len(codes) {
					row.Extracted, _ = codes[s].(string)
				}
				rows = append(rows, row)
			}
			if p1, has := number(prob["pass@1"]); has && math.Abs(p1-float64(passed)/float64(len(graded))) > 1e-9 {
				return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("%s (%s): pass@1 %v, but %d of %d generations are graded true", where, id, p1, passed, len(graded))}
			}
		}
	}
	return rows, "", nil
}

// readReasoningGym reads every dataset file of the eval script (an object with name and results; the
// category from its category field, else its folder's name). A result's samples are its completions'
// scores, or its own score; its id is the dataset and metadata.source_index, else its position.
// results.json (every category in one object) and summary.json repeat the dataset files and are passed
// over.
func readReasoningGym(dir string) ([]schemas.EvalResultRow, string, error) {
	files, err := findFiles(dir, func(name string) bool { return strings.HasSuffix(name, ".json") })
	if err != nil {
		return nil, "", err
	}
	var rows []schemas.EvalResultRow
	where := map[string]string{}
	for _, f := range files {
		v, err := jsonFile(f)
		if err != nil {
			return nil, "", err
		}
		obj, _ := v.(map[string]any)
		name, _ := obj["name"].(string)
		results, hasResults := obj["results"].([]any)
		if name == "" || !hasResults {
			continue
		}
		category, _ := obj["category"].(string)
		if category == "" {
			category = filepath.Base(filepath.Dir(f))
		}
		bench := "reasoning_gym_" + benchPart(category)
		dataset := benchPart(name)
		if first, dup := where[category+"/"+dataset]; dup {
			return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("dataset %s of category %s again (first in %s): name the folder of one evaluation", name, category, first)}
		}
		where[category+"/"+dataset] = f
		for i, r := range results {
			entry, _ := r.(map[string]any)
			at := fmt.Sprintf("results[%d]", i)
			id := fmt.Sprintf("%s_%d", dataset, i)
			if md, ok := entry["metadata"].(map[string]any); ok {
				if idx, ok := idText(md["source_index"]); ok {
					id = dataset + "_" + idx
				}
			}
			expected, _ := idText(entry["expected_answer"])
			samples := []map[string]any{entry}
			if comps, ok := entry["completions"].([]any); ok && len(comps) > 0 {
				samples = samples[:0]
				for _, c := range comps {
					m, _ := c.(map[string]any)
					samples = append(samples, m)
				}
			}
			for s, sample := range samples {
				score, ok := number(sample["score"])
				if !ok {
					return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("%s: sample %d has no numeric score", at, s)}
				}
				if score < 0 || score > 1 {
					return nil, "", &inputfile.Error{File: f, Problem: fmt.Sprintf("%s: score %v is outside [0, 1]", at, score)}
				}
				answer, _ := idText(sample["model_answer"])
				rows = append(rows, schemas.EvalResultRow{Bench: bench, ItemID: id, Sample: int32(s), Score: score,
					Extracted: answer, Detail: oneLine("expected " + expected)})
			}
		}
	}
	return rows, "", nil
}
