-- cost: what a step cost, the accounting the paper leaves open (SPADE §2 Table 5 and §4 limitations: "no
-- end-to-end cost in tokens or GPU-hours"): tokens by role, LLM latency, env CPU seconds and gate attempts
-- per step, and the same per env played at that step.
--
-- Tokens are prompt + completion tokens of llm_calls rows of the step (designer calls belong to the pool
-- step); the p95 latency is the nearest-rank quantile (quantile_disc). envs_played counts distinct envs
-- with episodes at the step; tokens_per_env divides every token of the step by it. gate_attempts counts
-- Designer candidates of the step (non-zero at refresh steps only); at refresh steps,
-- generation_tokens_per_accepted_env is the Designer's and screen's tokens per env the gate accepted
-- (what one usable environment cost to write).
with

role_calls as (
    -- one aggregation pass over llm_calls (millions of agent rows), pivoted by role below
    select
        run,
        step,
        role,
        sum(prompt_tokens + completion_tokens) as tokens,
        count(*) as calls,
        avg(latency_ms) as latency_ms,
        quantile_disc(latency_ms, 0.95) as latency_p95_ms
    from llm_calls
    group by run, step, role
),

calls as (
    select
        run,
        step,
        sum(tokens) filter (where role = 'designer') as designer_tokens,
        sum(tokens) filter (where role = 'agent') as agent_tokens,
        sum(tokens) filter (where role = 'screen') as screen_tokens,
        sum(calls) filter (where role = 'agent') as agent_calls,
        any_value(latency_ms) filter (where role = 'agent') as agent_latency_ms,
        any_value(latency_p95_ms) filter (where role = 'agent') as agent_latency_p95_ms,
        any_value(latency_ms) filter (where role = 'designer') as designer_latency_ms
    from role_calls
    group by run, step
),

plays as (
    select run, step, count(distinct env_id) as envs_played, sum(env_cpu_seconds) as env_cpu_seconds
    from episodes
    group by run, step
),

gate as (
    select run, step, count(*) as gate_attempts from candidates group by run, step
),

accepted as (
    select run, pool_step as step, count(*) as accepted_envs from envs group by run, pool_step
),

final as (
    select
        coalesce(c.run, p.run) as run,
        coalesce(c.step, p.step) as step,
        coalesce(c.designer_tokens, 0) as designer_tokens,
        coalesce(c.agent_tokens, 0) as agent_tokens,
        coalesce(c.screen_tokens, 0) as screen_tokens,
        coalesce(c.agent_calls, 0) as agent_calls,
        c.agent_latency_ms,
        c.agent_latency_p95_ms,
        c.designer_latency_ms,
        coalesce(p.env_cpu_seconds, 0) as env_cpu_seconds,
        coalesce(g.gate_attempts, 0) as gate_attempts,
        a.accepted_envs,
        (coalesce(c.designer_tokens, 0) + coalesce(c.screen_tokens, 0)) / nullif(a.accepted_envs, 0)::double
            as generation_tokens_per_accepted_env,
        coalesce(p.envs_played, 0) as envs_played,
        (coalesce(c.designer_tokens, 0) + coalesce(c.agent_tokens, 0) + coalesce(c.screen_tokens, 0))
            / nullif(p.envs_played, 0)::double as tokens_per_env
    from calls c
    full join plays p using (run, step)
    left join gate g on g.run = coalesce(c.run, p.run) and g.step = coalesce(c.step, p.step)
    left join accepted a on a.run = coalesce(c.run, p.run) and a.step = coalesce(c.step, p.step)
)

select * from final
order by run, step
