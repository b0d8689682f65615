-- regret_curve: the hint regret r̄(e|h) − r̄(e) per step, averaged over the envs played at that step, and
-- its trailing moving average over metrics_window steps (SPADE §3.5, Figure 12 right: "smoothed hint
-- regret").
--
-- r̄ are the env's mean outcomes at that step (env_outcomes: the counted episodes, outcome.value, so the
-- curve is the regret the Designer is rewarded on); an env without counted episodes on one side is left
-- out of that step's mean. The smoothed value at
-- step t averages the per-step means of steps t−window+1 .. t that exist (fewer at the start of the run).
-- Parameter: metrics_window (DuckDB variable, default 16).
with

params as (
    select coalesce(getvariable('metrics_window'), 16)::bigint as window_steps
),

env_step_returns as (
    select run, step, env_id, outcome_hint as return_hint, outcome_nohint as return_nohint
    from env_outcomes
),

step_regret as (
    select
        run,
        step,
        count(*) as envs,
        avg(return_hint - return_nohint) as regret,
        avg(greatest(return_hint - return_nohint, 0)) as clipped_regret
    from env_step_returns
    where return_hint is not null and return_nohint is not null
    group by run, step
),

smoothed as (
    select s.run, s.step, avg(w.regret) as regret_smoothed
    from step_regret s
    cross join params p
    join step_regret w
        on w.run = s.run and w.step between s.step - p.window_steps + 1 and s.step
    group by s.run, s.step
),

final as (
    select s.run, s.step, s.envs, s.regret, s.clipped_regret, m.regret_smoothed
    from step_regret s
    join smoothed m using (run, step)
)

select * from final
order by run, step
