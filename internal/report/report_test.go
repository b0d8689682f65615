package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/synth"
)

// chromium returns the headless browser (Debian's chromium; SPADE_CHROMIUM overrides), failing in CI
// when it is missing.
func chromium(t *testing.T) string {
	t.Helper()
	name := os.Getenv("SPADE_CHROMIUM")
	if name == "" {
		name = "chromium"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI (apt-get install chromium): %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
	return path
}

// headless runs Chromium on a local file with the flags CI uses and returns stdout and stderr.
func headless(t *testing.T, browser, page string, extra ...string) (string, string) {
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
func synthSessionSteps(t *testing.T, steps int, skipEmbed bool) *analytics.Session {
	t.Helper()
	ctx := context.Background()
	lk, err := lake.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := synth.Small()
	o.Steps = steps
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
	if status, _ := pageStatus(dom); !strings.HasPrefix(status, "charts-failed 8/9 bad=vendi") {
		t.Errorf("page check: %q, want charts-failed 8/9 bad=vendi", status)
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

var statusAttrs = regexp.MustCompile(`<div id="report-status"([^>]*)>`)

// pageStatus returns the page's own verdict (data-status) and the charts whose legend overlaps something
// (data-overlaps), read from the dumped DOM.
func pageStatus(dom string) (status, overlaps string) {
	attrs := statusAttrs.FindStringSubmatch(dom)
	if attrs == nil {
		return "", ""
	}
	get := func(name string) string {
		m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(attrs[1])
		if m == nil {
			return ""
		}
		return m[1]
	}
	return get("data-status"), get("data-overlaps")
}

// checkPage asserts, from the page's DOM as Chromium laid it out at 1400 px: every chart drew a visible
// mark, no legend item overlaps a title, another legend item or a plot, and the check's verdict is in
// attributes of a hidden element, never text a reader sees.
func checkPage(t *testing.T, dom string) {
	t.Helper()
	status, overlaps := pageStatus(dom)
	if status != "charts-ok 9/9" {
		t.Fatalf("page check: %q, want charts-ok 9/9", status)
	}
	if overlaps != "" {
		t.Errorf("legends overlap a title, a legend or the plot in: %s", overlaps)
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
}
