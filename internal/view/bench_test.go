package view

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/spadekit/spade/internal/laketest"
)

// BenchmarkViewPaperRun times the server's side of the two pages that must stay responsive on a long run
// (each under 1 s in the browser, so a long run stays browsable): the timeline's and a pool page's API call, on synth.Paper's
// 400-step run (24 envs × 32 episodes per step: 307,000 episodes, 4.2 million LLM calls; written once,
// about 10 s, or reused from SPADE_VIEW_PERF_LAKE as the browser test does). "cold" is the first request
// to a new server over a newly opened lake (listing, session, queries); "warm" a repeated one.
// BenchmarkBrowserPages times the same pages in the browser, the page's drawing included.
func BenchmarkViewPaperRun(b *testing.B) {
	const steps = 400
	dir := perfLake(b, steps)
	open := func(b *testing.B) (*Server, http.Handler) {
		lk := laketest.Open(b, dir)
		srv := New(lk, Options{Stages: testStages})
		return srv, srv.Handler()
	}
	serve := func(b *testing.B, h http.Handler, path string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
		}
	}
	pages := []struct{ name, path string }{
		{"timeline", "/api/runs/s/timeline"},
		{"pool", "/api/runs/s/steps/200"},
	}
	for _, page := range pages {
		b.Run(page.name+"/cold", func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				srv, h := open(b)
				b.StartTimer()
				serve(b, h, page.path)
				b.StopTimer()
				srv.Close()
				b.StartTimer()
			}
		})
		b.Run(page.name+"/warm", func(b *testing.B) {
			srv, h := open(b)
			defer srv.Close()
			serve(b, h, page.path)
			b.ResetTimer()
			for range b.N {
				serve(b, h, page.path)
			}
		})
	}
}
