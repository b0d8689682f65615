-- learnable_band: share of the environment quota whose no-hint solve rate lies in the learnable band,
-- per metrics.window-step window (SPADE §3.4, Figure 6).
--
-- An env's solve rate is the success fraction of its counted no-hint episodes over its whole pool (every
-- step the pool was played), from env_outcomes (outcome.exclude_ended_by: env_error and timeout by
-- default, which say nothing about the Agent). An env belongs to the window of its pool step. The denominator is the full quota,
-- sample.envs_per_step × the pool refreshes scheduled in the window (steps s with s % refresh_every = 0,
-- up to the run's last played step), so slots that produced no accepted env count as 0: the share mixes
-- gate acceptance and difficulty, exactly as the paper's figure does.
--
-- Parameters are DuckDB variables that `spade metrics` sets from the run config; by hand, `set variable`
-- them first, or the paper's defaults apply: metrics_band_lo 0.2, metrics_band_hi 0.8 (inclusive),
-- metrics_window 16, sample_envs_per_step 24, sample_refresh_every 4.
with

params as (
    select
        coalesce(getvariable('metrics_band_lo'), 0.2)::double as band_lo,
        coalesce(getvariable('metrics_band_hi'), 0.8)::double as band_hi,
        coalesce(getvariable('metrics_window'), 16)::bigint as window_steps,
        coalesce(getvariable('sample_envs_per_step'), 24)::bigint as envs_per_step,
        coalesce(getvariable('sample_refresh_every'), 4)::bigint as refresh_every
),

env_episodes as (
    -- per env its no-hint solve rate over the pool (and pool step), and its last played step, from
    -- which the run's span is taken below
    select
        run,
        env_id,
        min(pool_step) filter (where counted_nohint > 0) as pool_step,
        sum(solved_nohint) / nullif(sum(counted_nohint), 0)::double as solve_rate,
        max(step) as last_step
    from env_outcomes
    group by run, env_id
),

env_solve_rates as (
    select run, env_id, pool_step, solve_rate
    from env_episodes
    where solve_rate is not null
),

run_spans as (
    select run, max(last_step) as last_step
    from env_episodes
    group by run
),

windows as (
    select
        r.run,
        w.window_index,
        w.window_index * p.window_steps as window_start,
        least((w.window_index + 1) * p.window_steps - 1, r.last_step) as window_end
    from run_spans r
    cross join params p
    cross join lateral (select unnest(range(0, r.last_step // p.window_steps + 1)) as window_index) w
),

quotas as (
    select
        w.*,
        p.envs_per_step
            * (w.window_end // p.refresh_every - (w.window_start + p.refresh_every - 1) // p.refresh_every + 1)
            as quota
    from windows w
    cross join params p
),

window_envs as (
    select
        e.run,
        e.pool_step // p.window_steps as window_index,
        count(*) as envs,
        count(*) filter (where e.solve_rate between p.band_lo and p.band_hi) as envs_in_band
    from env_solve_rates e
    cross join params p
    group by all
),

final as (
    select
        q.run,
        q.window_index,
        q.window_start,
        q.window_end,
        q.quota,
        coalesce(e.envs, 0) as envs,
        coalesce(e.envs_in_band, 0) as envs_in_band,
        coalesce(e.envs_in_band, 0) / q.quota::double as band_share
    from quotas q
    left join window_envs e using (run, window_index)
)

select * from final
order by run, window_index
