-- solve_rates: the Agent's success rate and mean return per step, without and with the privileged hint
-- (SPADE §3.4; the per-step curves behind Figure 6 and Figure 12).
--
-- Episodes that ended by env_error or timeout are excluded from the rates and counted in env_failures.
with

played as (
    select run, step, hinted, success, "return" as episode_return, ended_by
    from episodes
),

per_step as (
    select
        run,
        step,
        count(*) filter (where not hinted) as episodes_nohint,
        count(*) filter (where hinted) as episodes_hint,
        avg(success::double) filter (where not hinted and ended_by not in ('env_error', 'timeout')) as solve_rate_nohint,
        avg(success::double) filter (where hinted and ended_by not in ('env_error', 'timeout')) as solve_rate_hint,
        avg(episode_return) filter (where not hinted and ended_by not in ('env_error', 'timeout')) as return_nohint,
        avg(episode_return) filter (where hinted and ended_by not in ('env_error', 'timeout')) as return_hint,
        count(*) filter (where ended_by in ('env_error', 'timeout')) as env_failures
    from played
    group by run, step
),

final as (
    select * from per_step
)

select * from final
order by run, step
