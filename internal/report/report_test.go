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
	dom, logs := headless(t, browser, path, "--dump-dom")
	if !strings.Contains(dom, `charts-ok 8/8`) {
		status := regexp.MustCompile(`charts-[a-z]+[^<]*`).FindString(dom)
		t.Fatalf("page check: %q, want charts-ok 8/8", status)
	}
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
	if !strings.Contains(dom, "charts-failed 7/8 bad=vendi") {
		t.Errorf("page check: %q, want charts-failed 7/8 bad=vendi", regexp.MustCompile(`charts-[a-z]+[^<]*`).FindString(dom))
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
	dom, _ := headless(t, browser, path, "--dump-dom")
	if !strings.Contains(dom, `charts-ok 8/8`) {
		status := regexp.MustCompile(`charts-[a-z]+[^<]*`).FindString(dom)
		t.Fatalf("page check on a 4-step run: %q, want charts-ok 8/8", status)
	}
}
