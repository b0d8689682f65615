-- dashboard: one row per metrics_window-step window of a run, the answer to "is the curriculum moving,
-- and is it still diverse and well-defined?" (SPADE §3.4: Figure 6's band share, Figure 12's regret,
-- the acceptance and Vendi/n that Table 8 and the audit discuss, and the cost per window).
--
-- Reads the other models as views (like dbt's ref()): learnable_band, acceptance, solve_rates,
-- regret_curve and vendi_by_window. `spade metrics` creates them; by hand, create each view from its
-- file first. Parameter: metrics_window (default 16).
with

params as (
    select coalesce(getvariable('metrics_window'), 16)::bigint as window_steps
),

band as (
    select run, window_index, window_start, window_end, quota, envs, band_share
    from learnable_band
),

gate as (
    select a.run, a.step // p.window_steps as window_index,
        sum(a.accepted) / nullif(sum(a.slots), 0)::double as acceptance,
        sum(a.candidates) / nullif(sum(a.slots), 0)::double as attempts_per_slot
    from acceptance a
    cross join params p
    group by all
),

solving as (
    select s.run, s.step // p.window_steps as window_index,
        avg(s.solve_rate_nohint) as solve_rate_nohint,
        avg(s.solve_rate_hint) as solve_rate_hint
    from solve_rates s
    cross join params p
    group by all
),

regret as (
    select r.run, r.step // p.window_steps as window_index, avg(r.regret) as regret
    from regret_curve r
    cross join params p
    group by all
),

diversity as (
    select run, window_index, vendi_per_n from vendi_by_window
),

spend as (
    -- the agent's tokens (episodes.tokens sums the episode's agent calls) and env CPU: 300k episode rows
    -- rather than millions of llm_calls rows; the Designer's and screen's tokens are in cost.sql
    select e.run, e.step // p.window_steps as window_index,
        sum(e.tokens) as agent_tokens,
        sum(e.env_cpu_seconds) as env_cpu_seconds
    from episodes e
    cross join params p
    group by all
),

final as (
    select
        b.run,
        b.window_index,
        b.window_start,
        b.window_end,
        b.envs,
        b.quota,
        g.acceptance,
        g.attempts_per_slot,
        b.band_share,
        s.solve_rate_nohint,
        s.solve_rate_hint,
        r.regret,
        d.vendi_per_n,
        c.agent_tokens,
        c.env_cpu_seconds
    from band b
    left join gate g using (run, window_index)
    left join solving s using (run, window_index)
    left join regret r using (run, window_index)
    left join diversity d using (run, window_index)
    left join spend c using (run, window_index)
)

select * from final
order by run, window_index
