package report

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/chromiumtest"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/gobuild"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/synth"
	"github.com/spadekit/spade/schemas"
)

// chromium returns the headless browser (chromiumtest.Path).
func chromium(t testing.TB) string { return chromiumtest.Path(t) }

// headless runs Chromium on a local file with the flags CI uses and returns stdout and stderr.
func headless(t testing.TB, browser, page string, extra ...string) (string, string) {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0"}, extra...)
	args = append(args, "file://"+page)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// synthSession writes a small synthetic run, embeds it unless skipEmbed, and opens a session.
func synthSession(t *testing.T, skipEmbed bool) *analytics.Session {
	t.Helper()
	return synthSessionSteps(t, 16, skipEmbed)
}

// synthSessionSteps is synthSession with a run of the given number of steps.
func synthSessionSteps(t testing.TB, steps int, skipEmbed bool) *analytics.Session {
	t.Helper()
	ctx := context.Background()
	lk := laketest.New(t)
	o := synth.Small()
	o.Steps, o.Train = steps, true
	if err := synth.Write(ctx, lk, "r", o); err != nil {
		t.Fatal(err)
	}
	if !skipEmbed {
		if _, err := analytics.EnsureEmbeddings(ctx, lk, "r", analytics.EmbedderSpec{}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := analytics.Open(ctx, lk, "r", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var consoleProblem = regexp.MustCompile(`(?i)CONSOLE.*(error|uncaught)|Uncaught`)

// TestReportRendersInChromium opens the report in headless Chromium: the page's own check must report
// every chart drawn, the console must be free of errors, and the screenshot must show the charts.
func TestReportRendersInChromium(t *testing.T) {
	browser := chromium(t)
	s := synthSession(t, false)
	page, err := Build(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page, []byte("http://")) && !bytes.Contains(page, []byte(`xmlns="http://www.w3.org/2000/svg"`)) {
		t.Error("the report references the network")
	}
	for _, ref := range []string{"<script src", "<link ", "@import", "url("} {
		if bytes.Contains(page, []byte(ref)) {
			t.Errorf("the report is not self-contained: it contains %q", ref)
		}
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	dom, logs := headless(t, browser, path, "--window-size=1400,1400", "--dump-dom")
	checkPage(t, dom)
	if m := consoleProblem.FindString(logs); m != "" {
		t.Errorf("console error: %s", m)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	_, logs = headless(t, browser, path, "--hide-scrollbars", "--window-size=1400,1400", "--screenshot="+shot)
	if m := consoleProblem.FindString(logs); m != "" {
		t.Errorf("console error: %s", m)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The palette's blue (#0072B2) must be on screen: the series and bars drew.
	blue := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 < 20 && g>>8 > 95 && g>>8 < 135 && bl>>8 > 160 && bl>>8 < 200 {
				blue++
			}
		}
	}
	if b.Dx() != 1400 || blue < 500 {
		t.Errorf("screenshot %v with %d blue samples: the charts did not paint", b, blue)
	}
}

// TestReportFlagsAnEmptyChart: without embeddings the Vendi chart has no marks, and the page says so
// (the check can fail).
func TestReportFlagsAnEmptyChart(t *testing.T) {
	browser := chromium(t)
	s := synthSession(t, true)
	page, err := Build(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	dom, _ := headless(t, browser, path, "--dump-dom")
	m := regexp.MustCompile(`^charts-failed (\d+)/(\d+) bad=vendi `).FindStringSubmatch(func() string { s, _ := pageStatus(dom); return s }())
	if m == nil || atoi(t, m[1])+1 != atoi(t, m[2]) {
		t.Errorf("page check: %v, want charts-failed N-1/N bad=vendi", m)
	}
}

// TestReportOnAShortRun: a run shorter than one window (like the demo's 4 steps) has one point per
// windowed chart; each must still draw a visible mark, so the page's check passes.
func TestReportOnAShortRun(t *testing.T) {
	browser := chromium(t)
	s := synthSessionSteps(t, 4, false)
	page, err := Build(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	dom, _ := headless(t, browser, path, "--window-size=1400,1400", "--dump-dom")
	checkPage(t, dom)
	// One window: every windowed chart writes its values beside its points.
	for _, id := range []string{"learnable-band", "vendi"} {
		chart := regexp.MustCompile(`(?s)<svg id="` + id + `".*?</svg>`).FindString(dom)
		if !strings.Contains(chart, `class="value"`) || !strings.Contains(chart, `class="point"`) {
			t.Errorf("chart %s on a one-window run has no labelled points", id)
		}
	}
}

var okStatus = regexp.MustCompile(`^charts-ok (\d+)/(\d+)$`)

var statusAttrs = regexp.MustCompile(`<div id="report-status"([^>]*)>`)

// pageAttrs returns the data-* attributes of the page's status element (status, overlaps, clipped,
// render-ms), read from the dumped DOM; nil when the element is missing.
func pageAttrs(dom string) map[string]string {
	attrs := statusAttrs.FindStringSubmatch(dom)
	if attrs == nil {
		return nil
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`data-([a-z-]+)="([^"]*)"`).FindAllStringSubmatch(attrs[1], -1) {
		out[m[1]] = m[2]
	}
	return out
}

// pageStatus returns the page's own verdict (data-status) and the charts whose legend overlaps something
// (data-overlaps), read from the dumped DOM.
func pageStatus(dom string) (status, overlaps string) {
	a := pageAttrs(dom)
	return a["status"], a["overlaps"]
}

// checkPage asserts, from the page's DOM as Chromium laid it out at 1400 px: every chart drew a visible
// mark, no legend item overlaps a title, another legend item, a plot or a value label, no text runs past
// its chart's edge, and the check's verdict is in attributes of a hidden element, never text a reader
// sees. It returns the page's render time: milliseconds from navigation start to the verdict.
func checkPage(t testing.TB, dom string) float64 {
	t.Helper()
	a := pageAttrs(dom)
	// Nine charts always; the outcome, evaluation and training charts when the run has their rows.
	if m := okStatus.FindStringSubmatch(a["status"]); m == nil || m[1] != m[2] || atoi(t, m[1]) < 9 {
		t.Fatalf("page check: %q, want charts-ok N/N with N >= 9", a["status"])
	}
	if a["overlaps"] != "" {
		t.Errorf("legends overlap a title, a legend, a value or the plot in: %s", a["overlaps"])
	}
	if a["clipped"] != "" {
		t.Errorf("text runs past the chart's edge in: %s", a["clipped"])
	}
	if attrs := statusAttrs.FindStringSubmatch(dom); !strings.Contains(attrs[1], "hidden") {
		t.Errorf("the status element is not hidden: %s", attrs[0])
	}
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(regexp.MustCompile(`(?s)<script.*?</script>`).ReplaceAllString(dom, ""), "")
	for _, marker := range []string{"charts-ok", "charts-failed", "charts-pending"} {
		if strings.Contains(text, marker) {
			t.Errorf("the test marker %q is text on the page", marker)
		}
	}
	ms, err := strconv.ParseFloat(a["render-ms"], 64)
	if err != nil || ms <= 0 {
		t.Errorf("page render time %q: %v", a["render-ms"], err)
	}
	return ms
}

// renderAndCheck writes page, opens it in headless Chromium at 1400 px, asserts checkPage and the console,
// and returns the page's render time in milliseconds.
func renderAndCheck(t testing.TB, browser string, page []byte) float64 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	dom, logs := headless(t, browser, path, "--window-size=1400,1400", "--dump-dom")
	if m := consoleProblem.FindString(logs); m != "" {
		t.Errorf("console error: %s", m)
	}
	return checkPage(t, dom)
}

// TestReportOnTheDemoLake renders `spade report` on the lake `make demo` leaves: scripts/demo.sh replays
// testdata/sample-run through every stage into a fresh lake with a spade built like the test binary (a
// short real run: 4 steps, one window, a dozen envs, no embeddings until the report computes them).
func TestReportOnTheDemoLake(t *testing.T) {
	if testing.Short() {
		t.Skip("builds spade and replays the demo; skipped with -short")
	}
	browser := chromium(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "testdata", "sample-run", "replay.json")); err != nil {
		t.Fatalf("the demo's recording is missing: %v", err)
	}
	python := os.Getenv("SPADE_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "spade")
	if err := gobuild.Build(gobuild.SpadePackage, bin); err != nil {
		t.Fatal(err)
	}
	lakeDir := filepath.Join(dir, "lake")
	env := append(os.Environ(), "SPADE="+bin, "SPADE_LAKE="+lakeDir, "SPADE_CACHE="+filepath.Join(dir, "cache"), "SPADE_PYTHON="+python)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	demo := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "demo.sh"), lakeDir, "demo")
	demo.Dir, demo.Env = root, env
	if out, err := demo.CombinedOutput(); err != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "report.html")
	report := exec.CommandContext(ctx, bin, "--run", "demo", "report", "--out", out)
	report.Dir, report.Env = dir, env
	if b, err := report.CombinedOutput(); err != nil {
		t.Fatalf("spade report: %v\n%s", err, b)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	renderAndCheck(t, browser, page)
}

// longSteps is the long synthetic run's length: the paper's 400 steps (SPADE_REPORT_LONG_STEPS overrides).
func longSteps(t testing.TB) int {
	if v := os.Getenv("SPADE_REPORT_LONG_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SPADE_REPORT_LONG_STEPS=%q", v)
		}
		return n
	}
	return 400
}

// TestReportOnALongRun: the report of a paper-length synthetic run (400 steps of synth.Small's pools, 50
// windows of 8: many windows, lines without point markers, regret and cost over hundreds of steps)
// passes the page's checks. BenchmarkReportLongRun times it.
func TestReportOnALongRun(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and embeds a 400-step run; skipped with -short")
	}
	browser := chromium(t)
	page, err := Build(context.Background(), synthSessionSteps(t, longSteps(t), false))
	if err != nil {
		t.Fatal(err)
	}
	renderAndCheck(t, browser, page)
}

// BenchmarkReportLongRun times Build on the run of TestReportOnALongRun (written and embedded once,
// outside the timer) and reports the page's size (bytes) and its render time in Chromium (render-ms:
// navigation start to charts-ok, the page's own clock), after the same checks as the test.
func BenchmarkReportLongRun(b *testing.B) {
	browser := chromium(b)
	s := synthSessionSteps(b, longSteps(b), false)
	var page []byte
	for b.Loop() {
		var err error
		if page, err = Build(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(page)), "bytes")
	b.ReportMetric(renderAndCheck(b, browser, page), "render-ms")
}

// evalSession is a synthetic run of 16 steps with eval_results for two benchmarks at steps 0, 8 and 15
// (4 items × 2 samples each, a score rising with the step).
func evalSession(t *testing.T) *analytics.Session {
	t.Helper()
	ctx := context.Background()
	lk := laketest.New(t)
	o := synth.Small()
	o.Steps = 16
	if err := synth.Write(ctx, lk, "r", o); err != nil {
		t.Fatal(err)
	}
	if _, err := analytics.EnsureEmbeddings(ctx, lk, "r", analytics.EmbedderSpec{}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		name string
		kind schemas.BenchKind
	}{{"aime", schemas.BenchMath}, {"gpqa", schemas.BenchChoice}} {
		for k, step := range []int64{0, 8, 15} {
			var rows []schemas.EvalResultRow
			for item := 0; item < 4; item++ {
				for sample := 0; sample < 2; sample++ {
					score := 0.0
					if item+sample <= k+1 {
						score = 1
					}
					rows = append(rows, schemas.EvalResultRow{Step: step, Bench: b.name, Kind: b.kind,
						ItemID: fmt.Sprintf("%s-%d", b.name, item), Sample: int32(sample), Score: score, WeightsVersion: fmt.Sprint(step)})
				}
			}
			key := lake.PartitionKey{Run: "r", Table: schemas.EvalResultsSpec.Name, Step: step, Fragment: "eval-" + b.name + "-c000000"}
			laketest.Write(t, lk, key, rows)
		}
	}
	s, err := analytics.Open(ctx, lk, "r", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReportEvalScores: a run with eval_results gets the "Benchmark scores per step" chart with one line
// per benchmark, three points each, and the page's check still passes; a run without has no such chart.
func TestReportEvalScores(t *testing.T) {
	ctx := context.Background()
	charts, err := Charts(ctx, evalSession(t))
	if err != nil {
		t.Fatal(err)
	}
	var chart *Chart
	for i := range charts {
		if charts[i].ID == "eval-scores" {
			chart = &charts[i]
		}
	}
	if chart == nil {
		t.Fatal("no eval-scores chart on a run with eval_results")
	}
	if !strings.Contains(chart.SVG, "Benchmark scores per step") {
		t.Error("the chart lacks its title")
	}
	if n := strings.Count(chart.SVG, `class="series"`); n != 2 {
		t.Errorf("%d series, want 2 (one per bench)", n)
	}
	if n := strings.Count(chart.SVG, `class="point"`); n != 6 {
		t.Errorf("%d points, want 6 (2 benches × 3 steps)", n)
	}
	for _, bench := range []string{"aime", "gpqa"} {
		if !strings.Contains(chart.SVG, ">"+bench+"<") {
			t.Errorf("legend lacks %s", bench)
		}
	}

	plain, err := Charts(ctx, synthSession(t, true))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plain {
		if c.ID == "eval-scores" {
			t.Error("an eval-scores chart on a run without eval_results")
		}
	}

	browser := chromium(t)
	page, err := Build(ctx, evalSession(t))
	if err != nil {
		t.Fatal(err)
	}
	renderAndCheck(t, browser, page)
}

// TestReportShowsLeftOutPlays: the steps whose Agent plays grpo left out of training appear in the
// report's table with their causes and the run's total; a run with none says so.
func TestReportShowsLeftOutPlays(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	o := synth.Small()
	o.Steps = 4
	if err := synth.Write(ctx, lk, "r", o); err != nil {
		t.Fatal(err)
	}
	build := func() string {
		t.Helper()
		s, err := analytics.Open(ctx, lk, "r", "")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		page, err := Build(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return string(page)
	}
	if page := build(); !strings.Contains(page, `data-left-out="0"`) {
		t.Errorf("a run without train_metrics should say no play was left out")
	}
	write := func(step int64, broken, missing int64) {
		rows := []schemas.TrainMetricsRow{{Step: step, Role: schemas.RoleAgent, Samples: 30, LeftOutBrokenPrefix: broken, LeftOutMissingTokens: missing},
			{Step: step, Role: schemas.RoleDesigner, Samples: 4}}
		if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: "r", Table: schemas.TrainMetricsSpec.Name, Step: step}, rows, lake.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 0, 0)
	write(1, 2, 1)
	write(2, 0, 4)
	page := build()
	if !strings.Contains(page, `data-left-out="7"`) || !strings.Contains(page, "7 Agent plays over 2 steps") {
		t.Fatalf("the report should count 7 plays left out over 2 steps:\n%s", page[strings.Index(page, "Plays left out"):])
	}
	section := page[strings.Index(page, "Plays left out"):]
	for _, want := range []string{"broken_prefix", "missing_tokens", ">2<", ">4<"} {
		if !strings.Contains(section, want) {
			t.Errorf("left-out table lacks %q:\n%s", want, section)
		}
	}
}

// TestReportShowsGateContradictions: an accepted env that passed the trivial check and was solved at
// once by every unhinted play in rollout is counted and listed; the count against a passed check is its
// own number.
func TestReportShowsGateContradictions(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "r", config.Default())
	gate := []schemas.GateResultRow{{Step: 0, EnvID: "easy-env", Attempt: 1, Check: "trivial", Passed: true}}
	if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: "r", Table: schemas.GateResultsSpec.Name, Step: 0}, gate, lake.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var episodes []schemas.EpisodeRow
	for i := 0; i < 6; i++ {
		episodes = append(episodes, schemas.EpisodeRow{Step: 0, EnvID: "easy-env", Skill: schemas.SkillMath, EpisodeID: fmt.Sprint("e", i),
			Index: int32(i), Success: true, Return: 1, Turns: 1, EndedBy: schemas.EndedDone})
	}
	if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: "r", Table: schemas.EpisodesSpec.Name, Step: 0}, episodes, lake.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := analytics.Open(ctx, lk, "r", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := Build(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(page), "rollout contradicts the gate")
	if i < 0 || !strings.Contains(string(page), `data-flagged="1" data-against-a-check="1"`) || !strings.Contains(string(page)[i:], "easy-env") {
		t.Fatalf("the report does not count the contradicted env:\n%s", string(page)[max(i, 0):])
	}
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
