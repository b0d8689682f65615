// Package view is `spade view`: a single-user web app over a lake, served from the binary (the HTML, CSS
// and JavaScript are embedded; nothing is fetched from elsewhere, there is no build step).
//
// Every number on its pages comes from DuckDB SQL over the lake, through the same sessions `spade query`
// opens (internal/duck: one view per table of a run, the models of sql/ as views). Each JSON answer
// carries the SQL that produced it, and the pages link every number to the SQL console prefilled with
// that query.
//
// A session is opened over one listing of each run's committed partitions (lake.ListRun), which also
// gives the stages-done grid and the files the session is locked down to; it is kept until that listing
// changes (checked at most every Options.Refresh). The app's own model queries (timeline, dashboard)
// are memoized with the session, and before the first of them the session materializes the outcome
// models that the others read (episode_outcomes, env_outcomes), so a long run's episodes are aggregated
// once rather than once per chart. BenchmarkViewPaperRun times the timeline and a pool page on the
// paper-size synthetic run (400 steps).
//
// Endpoints (all GET unless said; every page URL serves the app, which reads the JSON):
//
//	/api/runs                          every run: preset, steps committed per stage, its dashboard
//	/api/runs/{run}/timeline           stages done per step; band, solve rates, returns, regret,
//	                                   Vendi/n, acceptance, Designer reward, cost and train_metrics per
//	                                   step or window, and the charts drawn from them with their axes
//	/api/compare?run=A&run=B           the compare page's charts: dashboard columns per window and run
//	/api/config/diff?run=A&run=B       the configuration keys on which the runs differ
//	/api/runs/{run}/steps/{step}       the pool a step played: env cards, the gate's verdicts, repeats
//	/api/runs/{run}/envs/{env}         program, hint, corpus excerpt, prompt memory, episodes, response
//	/api/runs/{run}/episodes/{episode} one play turn by turn, with the Agent's answers from llm_calls
//	POST /api/query                    {"runs": [...], "sql": "..."}: the console (read-only)
//	/api/query.csv?run=R&sql=Q         the console's result as CSV
//
// Safety: the server binds to loopback unless given a token (CheckAddr); with a token every request
// carries it (header, cookie or ?token=). Sessions are locked down once their views exist (lockDown:
// external access off except for the run's own Parquet files, configuration locked), and the console
// runs only a single statement that DuckDB's own parser serializes as a SELECT (readOnlyQuery).
package view
