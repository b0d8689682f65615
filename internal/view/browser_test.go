package view

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/chromiumtest"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/synth"
)

// chromium returns the headless browser (chromiumtest.Path).
func chromium(t testing.TB) string { return chromiumtest.Path(t) }

// browserSession is a headless Chromium driven over the DevTools protocol that records console errors,
// uncaught exceptions and every request it makes.
type browserSession struct {
	ctx      context.Context
	mu       sync.Mutex
	errors   []string
	requests []string
	// expected counts the failed loads the test causes on purpose (a refused console query is a 403,
	// which Chromium logs as an error), by URL.
	expected map[string]int
}

// expectFailedLoad allows one logged failed load of url (a refusal the test asks for).
func (b *browserSession) expectFailedLoad(url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expected[url]++
}

func newBrowser(t testing.TB) *browserSession {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(browserProfile(t)), chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	b := &browserSession{ctx: ctx, expected: map[string]int{}}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeAssert {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				b.errors = append(b.errors, "console: "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			b.errors = append(b.errors, "exception: "+e.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError && e.Entry.Source == log.SourceNetwork && b.expected[e.Entry.URL] > 0 {
				b.expected[e.Entry.URL]--
			} else if e.Entry.Level == log.LevelError {
				b.errors = append(b.errors, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		}
	})
	if err := chromedp.Run(ctx, network.Enable(), log.Enable(), runtime.Enable()); err != nil {
		t.Fatal(err)
	}
	return b
}

// check fails the test on a console error or a request that left 127.0.0.1.
func (b *browserSession) check(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		t.Errorf("browser: %s", e)
	}
	if len(b.requests) == 0 {
		t.Error("browser: no request recorded")
	}
	for _, r := range b.requests {
		u, err := url.Parse(r)
		if err != nil || (u.Scheme != "data" && u.Hostname() != "127.0.0.1") {
			t.Errorf("browser: a request left 127.0.0.1: %s", r)
		}
	}
}

// wait waits until the app has drawn page, failing on its error page.
func wait(page string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var ready string
		for {
			if err := chromedp.Run(ctx, chromedp.Evaluate(`document.body.dataset.ready || ''`, &ready)); err != nil {
				return err
			}
			if ready == page {
				return nil
			}
			if ready == "error" {
				var msg string
				chromedp.Run(ctx, chromedp.Text(`[data-field=error]`, &msg, chromedp.ByQuery))
				return fmt.Errorf("the app shows an error instead of %s: %s", page, msg)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
}

// shot saves a full-page PNG screenshot under dir.
func shot(dir, name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var png []byte
		if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	})
}

// TestBrowserClickThrough opens the demo's run in headless Chromium and clicks from the run list to a
// timeline, a pool, an env and a hinted/unhinted pair; the program, the hint, the first observations and
// the outcomes on the pages must equal what DuckDB returns.
func TestBrowserClickThrough(t *testing.T) {
	b := newBrowser(t)
	lk, run := demoLake(t)
	ts := startServer(t, lk, Options{})
	dir := t.TempDir()
	var envID, code, hint, hintedID, unhintedID string
	err := chromedp.Run(b.ctx,
		chromedp.Navigate(ts.URL+"/"), wait("runs"), shot(dir, "runs"),
		chromedp.Click(`table[data-table=runs] a[href="/runs/`+run+`"]`, chromedp.ByQuery), wait("timeline"), shot(dir, "timeline"),
		chromedp.Click(`rect[data-stage=rollout][data-step="0"]`, chromedp.ByQuery), wait("pool"), shot(dir, "pool"),
		chromedp.AttributeValue(`.card`, "data-env", &envID, nil, chromedp.ByQuery),
		chromedp.Click(`.card h3 a`, chromedp.ByQuery), wait("env"), shot(dir, "env"),
		chromedp.TextContent(`[data-field=program]`, &code, chromedp.ByQuery),
		chromedp.TextContent(`[data-field=hint]`, &hint, chromedp.ByQuery),
		chromedp.Click(`button[data-control=play]`, chromedp.ByQuery), wait("play"), shot(dir, "play"),
		chromedp.AttributeValue(`[data-side=hinted]`, "data-episode", &hintedID, nil, chromedp.ByQuery),
		chromedp.AttributeValue(`[data-side=unhinted]`, "data-episode", &unhintedID, nil, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := truth(t, lk, run, "select code, hint from envs where env_id = "+lit(envID))
	if code != want[0] {
		t.Errorf("the program on the page differs from envs.code (%d vs %d chars)", len(code), len(want[0].(string)))
	}
	if hint != want[1] {
		t.Errorf("the hint on the page %q differs from envs.hint %q", hint, want[1])
	}
	for side, id := range map[string]string{"hinted": hintedID, "unhinted": unhintedID} {
		checkSide(t, b, lk, run, side, id)
	}
	pair := truth(t, lk, run, "select a.seed = b.seed, a.env_id = b.env_id from episodes a, episodes b where a.episode_id = "+lit(hintedID)+" and b.episode_id = "+lit(unhintedID))
	if pair[1] != true {
		t.Errorf("the pair is not of one env")
	}
	t.Logf("pair %s / %s, same seed: %v; screenshots in %s", hintedID, unhintedID, pair[0], dir)

	// The console: a result table and a refused write, both as the page shows them.
	var result, refusal string
	b.expectFailedLoad(ts.URL + "/api/query")
	err = chromedp.Run(b.ctx,
		chromedp.Navigate(ts.URL+"/console?"+url.Values{"run": {run}, "sql": {"select count(*) as n from episodes"}}.Encode()), wait("console"),
		chromedp.WaitVisible(`table[data-table=result]`, chromedp.ByQuery),
		chromedp.TextContent(`table[data-table=result] td`, &result, chromedp.ByQuery), shot(dir, "console"),
		chromedp.SetValue(`textarea[data-control=sql]`, "copy (select 1) to 'x.csv'", chromedp.ByQuery),
		chromedp.Click(`button[data-control=run]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-field=error]`, chromedp.ByQuery),
		chromedp.TextContent(`[data-field=error]`, &refusal, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n := truth(t, lk, run, "select count(*) from episodes")[0]; result != fmt.Sprint(n) {
		t.Errorf("console count %q, DuckDB %v", result, n)
	}
	if !strings.Contains(refusal, "only a single SELECT") {
		t.Errorf("console refusal: %q", refusal)
	}
	b.check(t)
}

// checkSide compares one column of the plays page with DuckDB: the first observation and the outcome.
func checkSide(t *testing.T, b *browserSession, lk *lake.Lake, run, side, id string) {
	t.Helper()
	var obs, ret, success, endedBy string
	sel := `[data-side=` + side + `] `
	err := chromedp.Run(b.ctx,
		chromedp.TextContent(sel+`[data-turn] [data-field=observation]`, &obs, chromedp.ByQuery),
		chromedp.AttributeValue(sel+`[data-field=outcome]`, "data-return", &ret, nil, chromedp.ByQuery),
		chromedp.AttributeValue(sel+`[data-field=outcome]`, "data-success", &success, nil, chromedp.ByQuery),
		chromedp.AttributeValue(sel+`[data-field=outcome]`, "data-ended-by", &endedBy, nil, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := truth(t, lk, run, "select (select observation from turns where episode_id = "+lit(id)+" order by turn limit 1), "+
		`"return"::varchar, success::varchar, ended_by, hinted from episodes where episode_id = `+lit(id))
	if obs != want[0] {
		t.Errorf("%s: first observation %q, DuckDB %q", side, obs, want[0])
	}
	// JavaScript prints a float as the shortest string that reads back, as DuckDB's cast does.
	if ret != want[1] && ret+".0" != want[1] {
		t.Errorf("%s: return %q, DuckDB %q", side, ret, want[1])
	}
	if success != want[2] || endedBy != want[3] {
		t.Errorf("%s: success %q ended_by %q, DuckDB %v %v", side, success, endedBy, want[2], want[3])
	}
	if want[4] != (side == "hinted") {
		t.Errorf("%s column shows an episode with hinted = %v", side, want[4])
	}
}

// BenchmarkBrowserPages times how long the run list, the timeline and a pool page take to draw in
// headless Chromium for a synthetic run of many steps with paper-sized pools: ns/op (and ready-ms) from
// the navigation to the page's ready mark, the server's queries included; api-ms the page's API calls'
// own time (the rest is the page's script). A "cold" visit is the first request to a new server over a
// newly opened lake (the session, the lake's listing and the queries all cold); a "warm" one repeats a
// visit to the same server. SPADE_VIEW_PERF_STEPS changes the step count (default 100; for the paper's
// 400 see perfLake). BenchmarkViewPaperRun times the same pages' API calls without the browser.
func BenchmarkBrowserPages(b *testing.B) {
	browser := newBrowser(b)
	steps := 100
	if v := os.Getenv("SPADE_VIEW_PERF_STEPS"); v != "" {
		fmt.Sscan(v, &steps)
	}
	dir := perfLake(b, steps)
	// open starts a server over a newly opened lake; the caller calls stop.
	open := func(b *testing.B) (ts *httptest.Server, stop func()) {
		srv := New(laketest.Open(b, dir), Options{Stages: testStages})
		ts = httptest.NewServer(srv.Handler())
		return ts, func() { ts.Close(); srv.Close() }
	}
	// visit navigates to path, waits for page and returns the time to ready and the API calls' time.
	visit := func(b *testing.B, ts *httptest.Server, path, page string) (ready time.Duration, apiMS float64) {
		begin := time.Now()
		if err := chromedp.Run(browser.ctx, chromedp.Navigate(ts.URL+path), wait(page)); err != nil {
			b.Fatal(err)
		}
		ready = time.Since(begin)
		if err := chromedp.Run(browser.ctx, chromedp.Evaluate(`performance.getEntriesByType('resource').filter(e => new URL(e.name).pathname.startsWith('/api/')).reduce((s, e) => s + e.duration, 0)`, &apiMS)); err != nil {
			b.Fatal(err)
		}
		return ready, apiMS
	}
	for _, p := range []struct{ name, path, page string }{
		{"runs", "/", "runs"},
		{"timeline", "/runs/s", "timeline"},
		{"pool", fmt.Sprintf("/runs/s/steps/%d", steps/2), "pool"},
	} {
		report := func(b *testing.B, ready time.Duration, apiMS float64) {
			b.ReportMetric(float64(ready.Milliseconds())/float64(b.N), "ready-ms")
			b.ReportMetric(apiMS/float64(b.N), "api-ms")
		}
		b.Run(p.name+"/cold", func(b *testing.B) {
			var ready time.Duration
			var api float64
			for range b.N {
				b.StopTimer()
				ts, stop := open(b)
				b.StartTimer()
				r, a := visit(b, ts, p.path, p.page)
				b.StopTimer()
				stop()
				b.StartTimer()
				ready, api = ready+r, api+a
			}
			report(b, ready, api)
		})
		b.Run(p.name+"/warm", func(b *testing.B) {
			ts, stop := open(b)
			defer stop()
			visit(b, ts, p.path, p.page)
			b.ResetTimer()
			var ready time.Duration
			var api float64
			for range b.N {
				r, a := visit(b, ts, p.path, p.page)
				ready, api = ready+r, api+a
			}
			report(b, ready, api)
		})
	}
	browser.check(b)
}

// perfLake returns the directory of a lake with synth.Paper's run "s" of the given number of steps. Writing
// 400 steps takes 10 s on 2 idle cores (much longer on busy ones), so SPADE_VIEW_PERF_LAKE may name a
// directory that keeps the lake between runs: the run is written there when the directory has none, and
// read as it is otherwise (delete the directory after changing synth or the step count).
func perfLake(t testing.TB, steps int) string {
	t.Helper()
	ctx := context.Background()
	dir := os.Getenv("SPADE_VIEW_PERF_LAKE")
	if dir == "" {
		dir = t.TempDir()
	}
	lk := laketest.Open(t, dir)
	o := synth.Paper()
	o.Steps = steps
	if _, err := lk.RunConfig(ctx, "s"); err == nil {
		t.Logf("synthetic run: reusing %s (SPADE_VIEW_PERF_LAKE)", dir)
		return dir
	}
	start := time.Now()
	if err := synth.Write(ctx, lk, "s", o); err != nil {
		t.Fatal(err)
	}
	t.Logf("synthetic run: %d steps × %d envs × %d episodes per env and condition, written in %v", steps, o.EnvsPerStep, o.GroupSize, time.Since(start).Round(time.Millisecond))
	return dir
}

// browserProfile returns a fresh Chromium user-data-dir, removed after the test. Chromium's helper
// processes may still write into it for a moment after the browser is stopped, so the removal retries
// briefly and a failure to remove it does not fail the test (t.TempDir's cleanup would).
func browserProfile(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "spade-view-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 20 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dir
}
