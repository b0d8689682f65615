package view

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
)

//go:embed assets
var assets embed.FS

// DefaultAddr is where `spade view` listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8600"

// StageMarker names a stage and the table whose committed partition at a step means it is done there
// (stage.Marker; cmd passes them so that this package knows no stage).
type StageMarker struct {
	Name  string
	Table string
}

// Options configure a Server.
type Options struct {
	// Token, when set, must come with every request (Authorization: Bearer, the spade_view_token cookie
	// or ?token=). CheckAddr requires one for a non-loopback address.
	Token string
	// Stages are the stages of a step in order, for the timeline's stages-done grid.
	Stages []StageMarker
	// Refresh is how often a session checks the lake for new commits (its file list); a session is
	// reopened only when the list changed (default 10 s).
	Refresh time.Duration
	// QueryTimeout bounds one console query (default 2 minutes).
	QueryTimeout time.Duration
}

// Server serves the app and its JSON API over one lake.
type Server struct {
	lk   *lake.Lake
	opts Options

	mu       sync.Mutex
	sessions map[string]*cached
}

// cached is an open session shared by requests; users counts the requests using it, so a replaced
// session is closed only once they are done. listings are the lake listings the session was opened over
// (one per run, kept for the stages-done grid), fingerprint their files. The app's own queries
// (dashboard, timeline) are kept in results until the lake changes.
type cached struct {
	sess        *duck.Session
	listings    map[string]*lake.RunListing
	fingerprint string
	checked     time.Time
	users       sync.WaitGroup

	mu           sync.Mutex
	results      map[string]*Dataset
	materialized int // how many of outcomeModels are materialized (materializeOutcomes)
}

// New returns a server over lk.
func New(lk *lake.Lake, opts Options) *Server {
	if opts.Refresh <= 0 {
		opts.Refresh = 10 * time.Second
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = 2 * time.Minute
	}
	return &Server{lk: lk, opts: opts, sessions: map[string]*cached{}}
}

// CheckAddr refuses a listen address that is not loopback unless a token is set: the app shows every
// table of the lake and runs SQL over it.
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if isLoopback(host) || token != "" {
		return nil
	}
	return fmt.Errorf("--addr %s is not a loopback address: pass --token SECRET too (every request must then carry it)", addr)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Close closes the open sessions.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for key, c := range s.sessions {
		c.users.Wait()
		errs = append(errs, c.sess.Close())
		delete(s.sessions, key)
	}
	return errors.Join(errs...)
}

// session returns a locked-down session over runs and the function to call when the request is done
// with it. A session is reused until the lake's files for the runs change (checked every Refresh).
func (s *Server) session(ctx context.Context, runs []string) (*duck.Session, func(), error) {
	c, err := s.entry(ctx, runs)
	if err != nil {
		return nil, nil, err
	}
	return c.sess, c.users.Done, nil
}

// entry returns the session over runs, counted as used (call users.Done when done with it). A session is
// reused without looking at the lake for Refresh after it was checked; then the runs are listed again
// (one listing each) and the session is reopened only if the files changed.
func (s *Server) entry(ctx context.Context, runs []string) (*cached, error) {
	key := strings.Join(runs, "\x00")
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.sessions[key]
	if ok && time.Since(c.checked) < s.opts.Refresh {
		c.users.Add(1)
		return c, nil
	}
	listings, files, err := s.list(ctx, runs)
	if err != nil {
		return nil, err
	}
	fingerprint := strings.Join(files, "\n")
	if ok && c.fingerprint == fingerprint {
		c.checked = time.Now()
		c.users.Add(1)
		return c, nil
	} else if ok {
		delete(s.sessions, key)
		go func() { c.users.Wait(); c.sess.Close() }()
	}
	sess, err := analytics.OpenListed(ctx, s.lk, listings, runs...)
	if err != nil {
		return nil, err
	}
	if err := lockDown(ctx, sess.DB, files); err != nil {
		sess.Close()
		return nil, err
	}
	c = &cached{sess: sess, listings: listings, fingerprint: fingerprint, checked: time.Now(), results: map[string]*Dataset{}}
	s.sessions[key] = c
	c.users.Add(1)
	return c, nil
}

// list lists each run once (and reads the first run's config for its corpus) and returns the listings
// and every file a session over them reads (lakeFiles).
func (s *Server) list(ctx context.Context, runs []string) (map[string]*lake.RunListing, []string, error) {
	corpus := ""
	listings := make(map[string]*lake.RunListing, len(runs))
	for i, run := range runs {
		cfg, err := s.lk.RunConfig(ctx, run)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			corpus = cfg.Sample.Corpus
		}
		if listings[run], err = s.lk.ListRun(ctx, run); err != nil {
			return nil, nil, err
		}
	}
	files, err := lakeFiles(ctx, s.lk, runs, listings, corpus)
	if err != nil {
		return nil, nil, err
	}
	return listings, files, nil
}

// memo runs one of the app's own queries over runs, or returns its result from the session's cache.
// With outcomes set, the query reads the per-episode and per-env outcome models and the session
// materializes them first (materializeOutcomes).
func (s *Server) memo(ctx context.Context, runs []string, text string, outcomes bool) (*Dataset, error) {
	c, err := s.entry(ctx, runs)
	if err != nil {
		return nil, err
	}
	defer c.users.Done()
	c.mu.Lock()
	defer c.mu.Unlock()
	if ds, ok := c.results[text]; ok {
		return ds, nil
	}
	if outcomes {
		if err := c.materializeOutcomes(ctx); err != nil {
			return nil, err
		}
	}
	ds, err := query(ctx, c.sess.DB, text, 0)
	if err != nil {
		return nil, err
	}
	c.results[text] = ds
	return ds, nil
}

// outcomeModels are the models that most others read (learnable_band, solve_rates, regret_curve,
// audits and dashboard through them), dependencies first.
var outcomeModels = []string{"episode_outcomes", "env_outcomes"}

// materializeOutcomes computes outcomeModels into temporary tables and points their views at them, once
// per session (under c.mu), so the timeline's and the dashboard's models read the run's episodes once
// between them rather than once per model. A session's files never change (a new commit opens a new
// session), so the views answer exactly what the model SQL would; the console sees them too. A model is
// counted only once both statements ran, so a request cancelled halfway leaves the next one to redo it.
func (c *cached) materializeOutcomes(ctx context.Context) error {
	for ; c.materialized < len(outcomeModels); c.materialized++ {
		model := outcomeModels[c.materialized]
		for _, stmt := range []string{
			"create or replace temp table " + model + "_materialized as select * from " + model,
			"create or replace temp view " + model + " as select * from " + model + "_materialized",
		} {
			if _, err := c.sess.DB.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("view: materialize %s: %w", model, err)
			}
		}
	}
	return nil
}

// Handler returns the app: the JSON API under /api/, the embedded assets under /assets/, and the app's
// page for every other path (the page routes itself by its URL).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/runs", s.handleRuns)
	mux.HandleFunc("GET /api/runs/{run}/timeline", s.handleTimeline)
	mux.HandleFunc("GET /api/runs/{run}/steps/{step}", s.handlePool)
	mux.HandleFunc("GET /api/runs/{run}/envs/{env}", s.handleEnv)
	mux.HandleFunc("GET /api/runs/{run}/episodes/{episode}", s.handleEpisode)
	mux.HandleFunc("GET /api/config/diff", s.handleConfigDiff)
	mux.HandleFunc("GET /api/compare", s.handleCompare)
	mux.HandleFunc("POST /api/query", s.handleQuery)
	mux.HandleFunc("GET /api/query.csv", s.handleQueryCSV)
	mux.HandleFunc("GET /api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("POST /api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		page, _ := assets.ReadFile("assets/index.html")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	return s.guard(mux)
}

// tokenCookie carries the token after a first ?token= visit, so links need not repeat it.
const tokenCookie = "spade_view_token"

// guard checks the token (when set) or, without one, that the Host header names a loopback address (a
// page elsewhere cannot reach the app through DNS rebinding); it sets headers that keep the page from
// loading or sending anything outside the app.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if s.opts.Token == "" {
			host := r.Host
			if hst, _, err := net.SplitHostPort(r.Host); err == nil {
				host = hst
			}
			if !isLoopback(host) {
				writeError(w, http.StatusForbidden, fmt.Errorf("host %q is not loopback: start spade view with --token to serve other hosts", r.Host))
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		given := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if c, err := r.Cookie(tokenCookie); given == "" && err == nil {
			given = c.Value
		}
		fromQuery := r.URL.Query().Get("token")
		if given == "" {
			given = fromQuery
		}
		if subtle.ConstantTimeCompare([]byte(given), []byte(s.opts.Token)) != 1 {
			writeError(w, http.StatusUnauthorized, errors.New("this server needs its token: open the URL with ?token=SECRET once"))
			return
		}
		if fromQuery != "" && r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
			// Keep the token in a cookie and out of the address bar (and of links pasted into notes).
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// runsParam returns the request's run names, every run of the lake when none is given.
func (s *Server) runsParam(ctx context.Context, given []string) ([]string, error) {
	var runs []string
	for _, r := range given {
		for _, name := range strings.Split(r, ",") {
			if name = strings.TrimSpace(name); name != "" && !slices.Contains(runs, name) {
				runs = append(runs, name)
			}
		}
	}
	if len(runs) > 0 {
		return runs, nil
	}
	return s.lk.Runs(ctx)
}
