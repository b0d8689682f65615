-- solve_rates: the Agent's success rate and mean return per step, without and with the privileged hint
-- (SPADE §3.4; the per-step curves behind Figure 6 and Figure 12).
--
-- Rates are over the episodes that count (episode_outcomes: outcome.exclude_ended_by, env_error and
-- timeout by default); the others are counted in env_failures.
with

played as (
    select run, step, hinted, success, episode_return, counted
    from episode_outcomes
),

per_step as (
    select
        run,
        step,
        count(*) filter (where not hinted) as episodes_nohint,
        count(*) filter (where hinted) as episodes_hint,
        avg(success::double) filter (where not hinted and counted) as solve_rate_nohint,
        avg(success::double) filter (where hinted and counted) as solve_rate_hint,
        avg(episode_return) filter (where not hinted and counted) as return_nohint,
        avg(episode_return) filter (where hinted and counted) as return_hint,
        count(*) filter (where not counted) as env_failures
    from played
    group by run, step
),

final as (
    select * from per_step
)

select * from final
order by run, step
