-- env_outcomes: per (step, env), the episodes with and without the hint, how many count, the solve rate
-- and the mean outcome r̄ of each side, and the env's failures: what the Designer's reward is computed from
-- (SPADE §2.2 solve rate, §2.3 r̄(e) and r̄(e|h)), and what every audit model reads instead of filtering
-- episodes itself (learnable_band, solve_rates, regret_curve, audits).
--
-- Reads episode_outcomes (counted, outcome: outcome.exclude_ended_by and outcome.value). Rates and means
-- are over the counted episodes of a side and NULL when none counts; `excluded` counts the episodes of
-- both sides that do not (the env's failures). internal/outcome computes the same rows in Go
-- (Rules.ByStepEnv); a test checks that both agree.
with

episodes_scored as (
    select * from episode_outcomes
),

per_step_env as (
    select
        run,
        step,
        env_id,
        min(pool_step) as pool_step,
        min(skill) as skill,
        count(*) filter (where not hinted) as episodes_nohint,
        count(*) filter (where hinted) as episodes_hint,
        count(*) filter (where not hinted and counted) as counted_nohint,
        count(*) filter (where hinted and counted) as counted_hint,
        count(*) filter (where not hinted and counted and success) as solved_nohint,
        count(*) filter (where hinted and counted and success) as solved_hint,
        count(*) filter (where not counted) as excluded,
        avg(success::double) filter (where not hinted and counted) as solve_rate_nohint,
        avg(success::double) filter (where hinted and counted) as solve_rate_hint,
        avg(outcome) filter (where not hinted and counted) as outcome_nohint,
        avg(outcome) filter (where hinted and counted) as outcome_hint,
        avg(episode_return) filter (where not hinted and counted) as return_nohint,
        avg(episode_return) filter (where hinted and counted) as return_hint
    from episodes_scored
    group by run, step, env_id
),

final as (
    select * from per_step_env
)

select * from final
order by run, step, env_id
