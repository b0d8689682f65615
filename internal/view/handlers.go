package view

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/schemas"
)

// consoleRowLimit bounds the rows the console shows (the CSV download has them all).
const consoleRowLimit = 5000

// runView is one run on the runs page.
type runView struct {
	Run       string       `json:"run"`
	Preset    string       `json:"preset"`
	Setting   string       `json:"setting"`
	Parent    string       `json:"parent,omitempty"`
	Stages    []stageSteps `json:"stages"`
	Committed int          `json:"steps_committed"` // steps done: trainedSteps
	LastStep  int64        `json:"last_step"`       // the highest step any stage committed, -1 for none
	Dashboard *Dataset     `json:"dashboard"`
}

// stageSteps lists the steps where a stage's marker table is committed.
type stageSteps struct {
	Name  string  `json:"name"`
	Table string  `json:"table"`
	Steps []int64 `json:"steps"`
}

// stageSteps lists each stage's committed steps and the highest of them (-1 for none), from the listing
// of the run's session (no listing of its own: the session's is at most Refresh old).
func (s *Server) stageSteps(ctx context.Context, run string) ([]stageSteps, int64, error) {
	c, err := s.entry(ctx, []string{run})
	if err != nil {
		return nil, 0, err
	}
	defer c.users.Done()
	listing := c.listings[run]
	out := []stageSteps{}
	last := int64(-1)
	for _, st := range s.opts.Stages {
		steps := listing.Steps[st.Table]
		if steps == nil {
			steps = []int64{}
		}
		for _, step := range steps {
			last = max(last, step)
		}
		out = append(out, stageSteps{Name: st.Name, Table: st.Table, Steps: steps})
	}
	return out, last, nil
}

// trainedSteps returns the steps at which a step is done: those of the stage that writes train_metrics
// (grpo, the last stage every step runs; eval after it runs only every eval.every steps) when the run has
// trained at all; for a run that never trained (a recording without training, a run with --only), those
// of the last stage in order that committed any step, eval's table aside.
func trainedSteps(stages []stageSteps) []int64 {
	for _, st := range stages {
		if st.Table == schemas.TrainMetricsSpec.Name && len(st.Steps) > 0 {
			return st.Steps
		}
	}
	for i := len(stages) - 1; i >= 0; i-- {
		if stages[i].Table != schemas.EvalResultsSpec.Name && len(stages[i].Steps) > 0 {
			return stages[i].Steps
		}
	}
	return nil
}

func (s *Server) handleRuns(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	runs, err := s.lk.Runs(ctx)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	out := []runView{}
	for _, run := range runs {
		rv, err := s.runView(ctx, run)
		if err != nil {
			writeError(w, statusOf(err), fmt.Errorf("run %s: %w", run, err))
			return
		}
		out = append(out, *rv)
	}
	writeJSON(w, map[string]any{"runs": out})
}

func (s *Server) runView(ctx context.Context, run string) (*runView, error) {
	cfg, err := s.lk.RunConfig(ctx, run)
	if err != nil {
		return nil, err
	}
	stages, last, err := s.stageSteps(ctx, run)
	if err != nil {
		return nil, err
	}
	rv := &runView{Run: run, Preset: cfg.Preset, Setting: string(cfg.Setting), Stages: stages, LastStep: last}
	if cfg.Parent != nil {
		rv.Parent = fmt.Sprintf("%s@%d", cfg.Parent.Run, cfg.Parent.Step)
	}
	rv.Committed = len(trainedSteps(stages))
	rv.Dashboard, err = s.memo(ctx, []string{run}, "select * exclude (run) from dashboard order by window_index", true)
	if err != nil {
		return nil, err
	}
	return rv, nil
}

// timelineQueries are the per-step and per-window series of the timeline, each one chart's data;
// outcomes marks those that read the outcome models (memo materializes them first).
var timelineQueries = []struct {
	name, sql string
	outcomes  bool
}{
	{"band", "select window_start, window_end, band_share, envs_in_band, quota from learnable_band order by window_start", true},
	{"solve_rates", "select step, solve_rate_nohint, solve_rate_hint, return_nohint, return_hint, episodes_nohint, episodes_hint from solve_rates order by step", true},
	{"regret", "select step, regret, regret_smoothed, envs from regret_curve order by step", true},
	{"vendi", "select window_index * getvariable('metrics_window') as window_start, vendi_per_n, envs from vendi_by_window order by window_start", false},
	{"acceptance", "select step, acceptance, attempts_per_slot, accepted, slots from acceptance order by step", false},
	{"cost", "select step, agent_tokens, designer_tokens, agent_latency_ms, agent_latency_p95_ms, env_cpu_seconds from cost order by step", false},
	{"left_out", "select step, broken_prefix, missing_tokens, missing_call, left_out, samples from left_out order by step", false},
	{"train", trainSQL(), false},
}

// designerRewardSQL is the Designer's mean final reward per pool under the run's reward variant.
func designerRewardSQL(variant schemas.Variant) string {
	return "select pool_step, avg(reward) as reward, avg(regret) as regret, avg(anchor) as anchor, count(*) as envs from designer_rewards where final and variant = " +
		lit(string(variant)) + " group by pool_step order by pool_step"
}

func (s *Server) handleTimeline(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	run := r.PathValue("run")
	cfg, err := s.lk.RunConfig(ctx, run)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	stages, last, err := s.stageSteps(ctx, run)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	series := map[string]*Dataset{}
	for _, q := range timelineQueries {
		ds, err := s.memo(ctx, []string{run}, q.sql, q.outcomes)
		if err != nil {
			writeError(w, statusOf(err), fmt.Errorf("%s: %w", q.name, err))
			return
		}
		series[q.name] = ds
	}
	rewards, err := s.memo(ctx, []string{run}, designerRewardSQL(cfg.Regret.Variant), false)
	if err != nil {
		writeError(w, statusOf(err), fmt.Errorf("designer_reward: %w", err))
		return
	}
	series["designer_reward"] = rewards
	writeJSON(w, map[string]any{
		"run": run, "preset": cfg.Preset, "last_step": last, "stages": stages,
		"refresh_every": cfg.Sample.RefreshEvery, "window": cfg.Metrics.Window, "series": series,
		"charts": timelineCharts(series),
	})
}

// pathStep parses the {step} of a URL.
func pathStep(r *http.Request) (int64, error) {
	step, err := strconv.ParseInt(r.PathValue("step"), 10, 64)
	if err != nil || step < 0 {
		return 0, fmt.Errorf("%w: step %q is not a step number", errNotFound, r.PathValue("step"))
	}
	return step, nil
}

// runSession opens the run's config and session for a request, writing the error itself.
func (s *Server) runSession(w http.ResponseWriter, r *http.Request) (*config.Config, *duck.Session, func(), bool) {
	run := r.PathValue("run")
	cfg, err := s.lk.RunConfig(r.Context(), run)
	if err != nil {
		writeError(w, statusOf(err), err)
		return nil, nil, nil, false
	}
	sess, done, err := s.session(r.Context(), []string{run})
	if err != nil {
		writeError(w, statusOf(err), err)
		return nil, nil, nil, false
	}
	return cfg, sess, done, true
}

// queries runs named SQL texts in order and returns their datasets (the first error stops them).
func queries(ctx context.Context, sess *duck.Session, named [][2]string) (map[string]*Dataset, error) {
	out := make(map[string]*Dataset, len(named))
	for _, q := range named {
		ds, err := query(ctx, sess.DB, q[1], 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q[0], err)
		}
		out[q[0]] = ds
	}
	return out, nil
}

// repeatedSQL lists the run's longest streaks of one class name or code (the pool page's last table).
const repeatedSQL = "select key_kind, key, streak, first_step, last_step from repeated_envs where streak > 1 order by streak desc, first_step limit 20"

func (s *Server) handlePool(w http.ResponseWriter, r *http.Request) {
	step, err := pathStep(r)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	cfg, sess, done, ok := s.runSession(w, r)
	if !ok {
		return
	}
	defer done()
	pool := cfg.PoolStep(step)
	p, st := strconv.FormatInt(pool, 10), strconv.FormatInt(step, 10)
	cards := `with pool_envs as (
    select env_id, slot, attempt, skill, class_name, doc_id, code_sha256 from envs where step = ` + p + `
), outcomes as (
    select env_id, solve_rate_nohint, solve_rate_hint, episodes_nohint, episodes_hint from env_outcomes where step = ` + st + `
), rewards as (
    select env_id, regret, anchor, reward, final from designer_rewards
    where pool_step = ` + p + ` and variant = ` + lit(string(cfg.Regret.Variant)) + `
    qualify row_number() over (partition by env_id order by final desc, step desc) = 1
), labels as (
    select env_id, arg_max(label, step) as memory_label from memory where pool_step = ` + p + ` group by env_id
), names as (
    select class_name, count(*) as class_name_envs, count(distinct step) as class_name_pools from envs group by class_name
), final as (
    select e.slot, e.env_id, e.skill, e.class_name, n.class_name_envs, n.class_name_pools, e.doc_id,
        o.solve_rate_nohint, o.solve_rate_hint, o.episodes_nohint, o.episodes_hint,
        r.regret, r.anchor, r.reward as designer_reward, r.final as reward_final, l.memory_label, e.attempt
    from pool_envs e left join outcomes o using (env_id) left join rewards r using (env_id)
        left join labels l using (env_id) left join names n using (class_name)
)
select * from final order by slot`
	data, err := queries(r.Context(), sess, [][2]string{
		{"envs", cards},
		{"candidates", "select slot, attempt, env_id, skill, doc_id, parse_error, previous_error from candidates where step = " + p + " order by slot, attempt"},
		{"gate", `select slot, attempt, "check", passed, skipped, error, duration_ms from gate_results where step = ` + p + " order by slot, attempt"},
	})
	if err == nil {
		// The same for every step of the run: kept with the session's results.
		data["repeated"], err = s.memo(r.Context(), []string{r.PathValue("run")}, repeatedSQL, false)
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	if len(data["envs"].Rows) == 0 && len(data["candidates"].Rows) == 0 {
		writeError(w, http.StatusNotFound, fmt.Errorf("run %s has no pool at step %d (pool step %d): no envs or candidates committed", r.PathValue("run"), step, pool))
		return
	}
	writeJSON(w, map[string]any{"run": r.PathValue("run"), "step": step, "pool_step": pool,
		"pool_end": pool + int64(cfg.Sample.RefreshEvery) - 1, "variant": cfg.Regret.Variant, "data": data})
}

func (s *Server) handleEnv(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, sess, done, ok := s.runSession(w, r)
	if !ok {
		return
	}
	defer done()
	envID := r.PathValue("env")
	envSQL := "select * exclude (run) from envs where env_id = " + lit(envID) + " order by step limit 1"
	envData, err := query(ctx, sess.DB, envSQL, 0)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	env := envData.record()
	if env == nil {
		writeError(w, http.StatusNotFound, fmt.Errorf("%w: run %s has no env %s", errNotFound, r.PathValue("run"), envID))
		return
	}
	pool := fmt.Sprint(env["step"])
	slot := fmt.Sprint(env["slot"])
	callID, _ := env["call_id"].(string)
	docID, _ := env["doc_id"].(string)
	refs := []string{}
	if list, ok := env["memory_refs"].([]any); ok {
		for _, ref := range list {
			refs = append(refs, fmt.Sprint(ref))
		}
	}
	data, err := queries(ctx, sess, [][2]string{
		{"sample", "select doc_id, excerpt, reused from samples where step = " + pool + " and slot = " + slot},
		{"corpus", "select doc_id, source, domain, text from corpus where doc_id = " + lit(docID)},
		{"designer_call", "select call_id, request, response_text, prompt_tokens, completion_tokens, latency_ms, model, weights_version, error from llm_calls where step = " + pool + " and call_id = " + lit(callID)},
		{"candidate", "select attempt, raw_response, parse_error, previous_error from candidates where step = " + pool + " and slot = " + slot + " order by attempt"},
		{"memory_refs", "select env_id, step, skill, class_name from envs where env_id in (select unnest(" + literalList(refs) + "::varchar[])) order by step"},
		{"rewards", "select variant, final, step, n_nohint, n_hint, solve_rate, r_nohint, r_hint, regret, anchor, reward, excluded from designer_rewards where env_id = " + lit(envID) + " order by variant, final, step"},
		{"episodes", `select episode_id, step, hinted, "index", seed, "return", success, turns, ended_by, tokens from episodes where env_id = ` + lit(envID) + " order by step, seed, hinted"},
	})
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	memory, prompt := "", ""
	if call := data["designer_call"].record(); call != nil {
		req, _ := call["request"].(string)
		prompt, memory = designerPrompt(req)
	}
	writeJSON(w, map[string]any{"run": r.PathValue("run"), "env": env, "env_sql": envSQL, "data": data,
		"prompt": prompt, "memory_section": memory})
}

// designerPrompt returns the user message of a recorded Chat Completions request and, within it, the
// section that shows the Designer its memory (from a "## ... memory ..." heading to the next "## ").
func designerPrompt(request string) (prompt, memory string) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal([]byte(request), &req) != nil {
		return "", ""
	}
	for _, m := range req.Messages {
		if m.Role == "user" {
			if text, ok := m.Content.(string); ok {
				prompt = text
			}
		}
	}
	lines := strings.Split(prompt, "\n")
	var section []string
	in := false
	for _, line := range lines {
		if strings.HasPrefix(line, "## ") {
			in = strings.Contains(strings.ToLower(line), "memory")
		}
		if in {
			section = append(section, line)
		}
	}
	return prompt, strings.TrimSpace(strings.Join(section, "\n"))
}

func (s *Server) handleEpisode(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, sess, done, ok := s.runSession(w, r)
	if !ok {
		return
	}
	defer done()
	id := r.PathValue("episode")
	epSQL := "select * exclude (run) from episodes where episode_id = " + lit(id)
	epData, err := query(ctx, sess.DB, epSQL, 0)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	ep := epData.record()
	if ep == nil {
		writeError(w, http.StatusNotFound, fmt.Errorf("%w: run %s has no episode %s", errNotFound, r.PathValue("run"), id))
		return
	}
	step := fmt.Sprint(ep["step"])
	env, _ := ep["env_id"].(string)
	hinted, _ := ep["hinted"].(bool)
	data, err := queries(ctx, sess, [][2]string{
		{"turns", `select t.turn, t.observation, c.response_text as answer, t.action, t.parse_error, t.reward, t.done, t.info,
    c.prompt_tokens, c.completion_tokens, c.latency_ms, c.finish_reason, c.error as call_error, t.call_id
from turns t left join llm_calls c on c.call_id = t.call_id and c.step = t.step
where t.step = ` + step + ` and t.episode_id = ` + lit(id) + ` order by t.turn`},
		{"counterparts", `select episode_id, step, hinted, seed, "return", success, ended_by from episodes
where env_id = ` + lit(env) + ` and hinted = ` + strconv.FormatBool(!hinted) + `
order by seed <> ` + fmt.Sprint(ep["seed"]) + `, abs(step - ` + step + `), "index" limit 8`},
		{"env", "select env_id, class_name, skill, hint from envs where env_id = " + lit(env) + " limit 1"},
	})
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, map[string]any{"run": r.PathValue("run"), "episode": ep, "episode_sql": epSQL, "data": data})
}

// consoleRequest is the console's POST body.
type consoleRequest struct {
	Runs []string `json:"runs"`
	SQL  string   `json:"sql"`
}

// consoleQuery checks and runs console SQL over runs and returns its session's DB answer through fn.
func (s *Server) consoleQuery(ctx context.Context, runs []string, text string, fn func(context.Context, *duck.Session, string) error) error {
	runs, err := s.runsParam(ctx, runs)
	if err != nil {
		return err
	}
	sess, done, err := s.session(ctx, runs)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, s.opts.QueryTimeout)
	defer cancel()
	checked, err := readOnlyQuery(ctx, sess.DB, text)
	if err != nil {
		return err
	}
	return fn(ctx, sess, checked)
}

func (s *Server) handleQuery(w http.ResponseWriter, r *http.Request) {
	var req consoleRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("the body must be JSON {\"runs\": [...], \"sql\": \"...\"}: %w", err))
		return
	}
	var ds *Dataset
	err := s.consoleQuery(r.Context(), req.Runs, req.SQL, func(ctx context.Context, sess *duck.Session, text string) error {
		var err error
		ds, err = query(ctx, sess.DB, text, consoleRowLimit)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", errBadSQL, err)
		}
		return err
	})
	if err != nil {
		writeError(w, consoleStatus(err), err)
		return
	}
	writeJSON(w, ds)
}

func (s *Server) handleQueryCSV(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	err := s.consoleQuery(r.Context(), r.URL.Query()["run"], r.URL.Query().Get("sql"), func(ctx context.Context, sess *duck.Session, text string) error {
		if err := duck.Render(ctx, sess.DB, text, "csv", "", &buf); err != nil {
			return fmt.Errorf("%w: %w", errBadSQL, err)
		}
		return nil
	})
	if err != nil {
		writeError(w, consoleStatus(err), err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="spade-query.csv"`)
	w.Write(buf.Bytes())
}

// consoleStatus is statusOf for the console (kept apart so the console's codes read in one place).
func consoleStatus(err error) int { return statusOf(err) }
