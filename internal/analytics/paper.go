package analytics

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/lake"
)

// PaperTable is one of the paper's downstream tables (SPADE §4, Tables 1-3) over runs: one row per run,
// the run's selected checkpoint, read from sql/paper_tables.sql (the columns from sql/paper_columns.sql).
type PaperTable struct {
	// Number is the paper's table: 1 (games), 2 (tools) or 3 (the ablations, on Table 1's columns).
	Number int
	// Title names the table.
	Title string
	// Columns are the suites' column names, in the paper's order.
	Columns []string
	// Rows are the runs, in the order asked.
	Rows []PaperRow
}

// PaperRow is one run's row: its selected checkpoint's scores in [0, 1].
type PaperRow struct {
	// Run is the run's name.
	Run string
	// Evaluated is false when the run has no checkpoint evaluated on any of the table's suites (Step,
	// Weights, Scores and Average are then unset).
	Evaluated bool
	// Step and Weights are the selected checkpoint.
	Step    int64
	Weights string
	// Scores are the columns' scores, NaN where the checkpoint lacks the column.
	Scores []float64
	// Average is the equal-weight mean of the Scored columns (NaN when none).
	Average float64
	// Scored counts the columns the checkpoint has.
	Scored int
}

// paperTables maps a table number to its suite group in sql/paper_columns.sql and its title.
var paperTables = map[int]struct{ group, title string }{
	1: {"games", "Reasoning benchmarks (games)"},
	2: {"tools", "Tool-use benchmarks (tools)"},
	3: {"games", "Ablations (on Table 1's benchmarks)"},
}

// PaperTableNumbers lists the tables LoadPaperTable renders.
func PaperTableNumbers() []int { return []int{1, 2, 3} }

// LoadPaperTable reads table number of the paper over runs (each of which must exist): per run, the
// checkpoint sql/paper_tables.sql selects, with its column scores and average.
func LoadPaperTable(ctx context.Context, lk *lake.Lake, runs []string, number int) (*PaperTable, error) {
	spec, ok := paperTables[number]
	if !ok {
		return nil, fmt.Errorf("analytics: no paper table %d (1, 2 or 3)", number)
	}
	s, err := OpenRuns(ctx, lk, runs...)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	cols, err := Query(ctx, s.DB, `select distinct column_index, column_name from paper_columns where suite_group = $1 order by column_index`, spec.group)
	if err != nil {
		return nil, fmt.Errorf("analytics: paper_columns: %w", err)
	}
	t := &PaperTable{Number: number, Title: spec.title}
	for i := range cols.Rows {
		t.Columns = append(t.Columns, cols.String(i, "column_name"))
	}
	cells, err := Query(ctx, s.DB, `select run, step, weights_version, column_index, score, average, columns_scored
		from paper_tables where selected and suite_group = $1 order by run, column_index`, spec.group)
	if err != nil {
		return nil, fmt.Errorf("analytics: paper_tables: %w", err)
	}
	byRun := map[string]*PaperRow{}
	for _, run := range runs {
		row := &PaperRow{Run: run, Scores: make([]float64, len(t.Columns)), Average: math.NaN()}
		for i := range row.Scores {
			row.Scores[i] = math.NaN()
		}
		byRun[run] = row
	}
	for i := range cells.Rows {
		row := byRun[cells.String(i, "run")]
		if row == nil {
			continue
		}
		row.Evaluated = true
		row.Step, row.Weights = int64(cells.Float(i, "step")), cells.String(i, "weights_version")
		row.Scored = int(cells.Float(i, "columns_scored"))
		if cells.String(i, "average") != "" {
			row.Average = cells.Float(i, "average")
		}
		if c := int(cells.Float(i, "column_index")) - 1; c >= 0 && c < len(row.Scores) && cells.String(i, "score") != "" {
			row.Scores[c] = cells.Float(i, "score")
		}
	}
	for _, run := range runs {
		t.Rows = append(t.Rows, *byRun[run])
	}
	return t, nil
}

// PaperFormats are the formats PaperTable.Render writes.
var PaperFormats = []string{"markdown", "csv", "latex"}

// percent writes a score in [0, 1] as a percentage with one decimal, as the paper's tables do.
func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) }

// Delta reports whether the table shows each row's average minus the first row's (Table 3: the
// ablations against the full method, the first run).
func (t *PaperTable) Delta() bool { return t.Number == 3 }

// best marks, per column (the average last), the rows holding the column's highest shown value, when
// at least two rows have one (ties are all marked); only averages over every suite compete.
func (t *PaperTable) best() [][]bool {
	marks := make([][]bool, len(t.Rows))
	for i := range marks {
		marks[i] = make([]bool, len(t.Columns)+1)
	}
	for c := 0; c <= len(t.Columns); c++ {
		value := func(r PaperRow) float64 {
			if c == len(t.Columns) {
				if r.Scored < len(t.Columns) {
					return math.NaN() // an average over fewer suites is not comparable
				}
				return r.Average
			}
			return r.Scores[c]
		}
		top, n := math.Inf(-1), 0
		for _, r := range t.Rows {
			if v := value(r); !math.IsNaN(v) {
				n++
				top = math.Max(top, math.Round(1000*v)/1000)
			}
		}
		if n < 2 {
			continue
		}
		for i, r := range t.Rows {
			if v := value(r); !math.IsNaN(v) && math.Round(1000*v)/1000 == top {
				marks[i][c] = true
			}
		}
	}
	return marks
}

// Note says how the table was made: the offline checkpoint choice, the marks, missing suites.
func (t *PaperTable) Note() string {
	n := len(t.Columns)
	note := fmt.Sprintf("Scores in %%, one decimal. † checkpoint chosen offline: per run, the step with the highest equal-weight average over these %d suites (among those with the most suites), selected on the test suites themselves. Bold: best in the column (averages over every suite only). — : not evaluated at that checkpoint; an average over fewer suites shows (k/%d).", n, n)
	if t.Delta() {
		note += " Δ: the average minus the first run's, in points."
	}
	return note
}

// cells returns a row's shown cells: the step, each column, the average and, for Table 3, the Δ.
func (t *PaperTable) cells(i int, missing string, fewer func(avg string, k, n int) string) []string {
	r := t.Rows[i]
	out := []string{missing}
	if r.Evaluated {
		out[0] = strconv.FormatInt(r.Step, 10)
	}
	for _, v := range r.Scores {
		if math.IsNaN(v) {
			out = append(out, missing)
		} else {
			out = append(out, percent(v))
		}
	}
	switch {
	case math.IsNaN(r.Average):
		out = append(out, missing)
	case r.Scored < len(t.Columns):
		out = append(out, fewer(percent(r.Average), r.Scored, len(t.Columns)))
	default:
		out = append(out, percent(r.Average))
	}
	if t.Delta() {
		first := t.Rows[0].Average
		switch {
		case i == 0 || math.IsNaN(r.Average) || math.IsNaN(first):
			out = append(out, missing)
		default:
			d := math.Round(1000*r.Average)/10 - math.Round(1000*first)/10
			out = append(out, strings.Replace(strconv.FormatFloat(d, 'f', 1, 64), "-", "−", 1))
			if d >= 0 {
				out[len(out)-1] = "+" + out[len(out)-1]
			}
		}
	}
	return out
}

// header returns the shown column names: Run, Step, the suites, Avg and, for Table 3, Δ.
func (t *PaperTable) header() []string {
	h := append(append([]string{"Run", "Step"}, t.Columns...), "Avg")
	if t.Delta() {
		h = append(h, "Δ")
	}
	return h
}

// Render writes the table as markdown (a pipe table, its title above and its note below), csv (one row
// per run with every column, the checkpoint and how it was chosen) or latex (a booktabs tabular with
// the note below).
func (t *PaperTable) Render(w io.Writer, format string) error {
	switch format {
	case "markdown":
		return t.renderMarkdown(w)
	case "csv":
		return t.renderCSV(w)
	case "latex":
		return t.renderLaTeX(w)
	}
	return fmt.Errorf("unknown format %q (%s)", format, strings.Join(PaperFormats, ", "))
}

func (t *PaperTable) renderMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "**Table %d. %s.**\n\n", t.Number, t.Title)
	h := t.header()
	fmt.Fprintf(w, "| %s |\n|:--|%s\n", strings.Join(h, " | "), strings.Repeat("--:|", len(h)-1))
	marks := t.best()
	for i, r := range t.Rows {
		cells := t.cells(i, "—", func(avg string, k, n int) string { return fmt.Sprintf("%s (%d/%d)", avg, k, n) })
		if r.Evaluated {
			cells[0] += "†"
		}
		for c := 0; c <= len(t.Columns); c++ {
			if marks[i][c] {
				cells[1+c] = "**" + cells[1+c] + "**"
			}
		}
		fmt.Fprintf(w, "| %s | %s |\n", r.Run, strings.Join(cells, " | "))
	}
	_, err := fmt.Fprintf(w, "\n%s\n", t.Note())
	return err
}

func (t *PaperTable) renderCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	header := []string{"run", "step", "weights_version"}
	header = append(header, t.Columns...)
	header = append(header, "average", "suites_scored", "suites")
	if t.Delta() {
		header = append(header, "delta_average")
	}
	cw.Write(append(header, "checkpoint"))
	for i, r := range t.Rows {
		cells := t.cells(i, "", func(avg string, _, _ int) string { return avg })
		rec := []string{r.Run, cells[0], r.Weights}
		rec = append(rec, cells[1:1+len(t.Columns)]...)
		rec = append(rec, cells[1+len(t.Columns)], strconv.Itoa(r.Scored), strconv.Itoa(len(t.Columns)))
		if t.Delta() {
			rec = append(rec, strings.Replace(cells[len(cells)-1], "−", "-", 1))
		}
		choice := "offline: best average on these test suites"
		if !r.Evaluated {
			choice = "not evaluated"
		}
		cw.Write(append(rec, choice))
	}
	cw.Flush()
	return cw.Error()
}

// latexText escapes text for LaTeX and writes τ² in math mode.
func latexText(s string) string {
	s = strings.NewReplacer(`\`, `\textbackslash{}`, "_", `\_`, "%", `\%`, "&", `\&`, "#", `\#`, "$", `\$`,
		"{", `\{`, "}", `\}`, "τ²", `$\tau^2$`, "Δ", `$\Delta$`, "—", "--", "−", "$-$").Replace(s)
	return s
}

func (t *PaperTable) renderLaTeX(w io.Writer) error {
	h := t.header()
	fmt.Fprintf(w, "%% Table %d. %s (spade ablate --table %d)\n", t.Number, t.Title, t.Number)
	fmt.Fprintf(w, "\\begin{tabular}{l%s}\n\\toprule\n", strings.Repeat("r", len(h)-1))
	names := make([]string, len(h))
	for i, c := range h {
		names[i] = latexText(c)
	}
	fmt.Fprintf(w, "%s \\\\\n\\midrule\n", strings.Join(names, " & "))
	marks := t.best()
	for i, r := range t.Rows {
		cells := t.cells(i, "—", func(avg string, k, n int) string { return fmt.Sprintf("%s (%d/%d)", avg, k, n) })
		for j := range cells {
			cells[j] = latexText(cells[j])
		}
		if r.Evaluated {
			cells[0] += `$^\dagger$`
		}
		for c := 0; c <= len(t.Columns); c++ {
			if marks[i][c] {
				cells[1+c] = `\textbf{` + cells[1+c] + `}`
			}
		}
		fmt.Fprintf(w, "%s & %s \\\\\n", latexText(r.Run), strings.Join(cells, " & "))
	}
	note := strings.Replace(latexText(t.Note()), "†", `$^\dagger$`, 1)
	_, err := fmt.Fprintf(w, "\\bottomrule\n\\end{tabular}\n\n{\\footnotesize %s}\n", note)
	return err
}
