-- audits: the paper's environment quality audit, early vs late (SPADE §3.4 and its appendix: well-defined
-- 0.98 / 0.97, verifiable terminal answer 0.90 / 0.93, formula disclosure 25% → 5%, distinct reward levels
-- 3.7 → 5.8, strictly partial levels 2.2 → 4.0, learnable band 0.16 → 0.31).
--
-- phase: early for envs whose pool step is in the first half of the run's played steps, late otherwise.
-- Per env (accepted envs only), then averaged per phase:
--   well_defined     every gate check of the accepted attempt passed (the gate's reset check replays
--                    seeds and fails a non-deterministic reset) and no episode failed on the env's side
--                    (env_outcomes.excluded: outcome.exclude_ended_by, env_error and timeout by
--                    default). Gate results are the record of determinism: a second, seed-by-seed check
--                    over turns would join millions of turns to episodes for what the gate already proved.
--   verifiable       at least one episode ended through done, and every done turn carries a boolean
--                    info.success (a defined terminal answer).
--   formula_disclosed  an opening observation states a formula. Heuristic (documented, imperfect): LaTeX
--                    (\frac, \sqrt, ^{...}, $...$ or \( \)), or an equation with named quantities
--                    ("name = expression" whose right side has an operator between two operands), or a
--                    formula keyword (formula, equation, "is given by", "proportional to"). It misses
--                    laws stated in prose ("double the mass") and counts assignment-like text that is
--                    not a physical law ("score = hits * 2"), so compare phases, not absolute levels.
--   reward_levels    distinct per-turn reward values over all the env's turns; partial_levels those
--                    strictly between 0 and 1.
--   in_band          no-hint solve rate (env_outcomes, over all the env's steps) in [metrics_band_lo,
--                    metrics_band_hi] (share of envs, not of the quota: the quota-based share is
--                    learnable_band.sql).
with

params as (
    select
        coalesce(getvariable('metrics_band_lo'), 0.2)::double as band_lo,
        coalesce(getvariable('metrics_band_hi'), 0.8)::double as band_hi
),

accepted_envs as (
    select run, env_id, pool_step, attempt from envs
),

gate_ok as (
    select g.run, g.env_id, bool_and(g.passed or g.skipped) and count(*) filter (where g.passed) > 0 as all_passed
    from gate_results g
    join accepted_envs e on e.run = g.run and e.env_id = g.env_id and e.attempt = g.attempt
    group by g.run, g.env_id
),

outcome_facts as (
    select
        run,
        env_id,
        sum(excluded) as env_failures,
        sum(solved_nohint) / nullif(sum(counted_nohint), 0)::double as solve_rate
    from env_outcomes
    group by run, env_id
),

episode_facts as (
    -- the one pass over episodes; the run's span of played steps is derived from it below
    select
        e.run,
        e.env_id,
        min(e.step) as first_step,
        max(e.step) as last_step,
        any_value(o.env_failures) as env_failures,
        count(*) filter (where e.ended_by = 'done') as done_episodes,
        any_value(o.solve_rate) as solve_rate
    from episodes e
    join outcome_facts o using (run, env_id)
    group by e.run, e.env_id
),

run_spans as (
    select run, min(first_step) as first_step, max(last_step) as last_step from episode_facts group by run
),

turn_groups as (
    -- one pass over the (millions of) turns, grouped by (env, reward, opening): the key holds a hash of the
    -- opening observation rather than its text (the text is kept once per group), and the JSON of info
    -- is parsed on done turns only; the disclosure regexes then run once per distinct opening
    select
        run,
        env_id,
        reward,
        case when turn = 0 then hash(observation) end as opening_hash,
        any_value(case when turn = 0 then observation end) as opening,
        bool_and(case when done then coalesce(
            case when json_valid(info) then json_type(info, '$.success') = 'BOOLEAN' end, false) end)
            as defined_success
    from turns
    group by run, env_id, reward, opening_hash
),

turn_facts as (
    select
        run,
        env_id,
        count(distinct reward) as reward_levels,
        count(distinct reward) filter (where reward > 0 and reward < 1) as partial_levels,
        bool_and(defined_success) as defined_success,
        bool_or(
            regexp_matches(opening, '\\frac|\\sqrt|\^\{|\$[^$]+\$|\\\(')
            or regexp_matches(opening, '[A-Za-z_][A-Za-z0-9_]*\s*=\s*[^=,;]*[A-Za-z0-9_)]\s*[-+*/^]\s*[A-Za-z0-9_(]')
            or regexp_matches(lower(opening), 'formula|equation|is given by|proportional to')
        ) as formula_disclosed
    from turn_groups
    group by run, env_id
),

per_env as (
    select
        e.run,
        e.env_id,
        case when e.pool_step < (s.first_step + s.last_step + 1) / 2.0 then 'early' else 'late' end as phase,
        coalesce(g.all_passed, false)
            and coalesce(f.env_failures, 0) = 0 as well_defined,
        coalesce(f.done_episodes, 0) > 0 and coalesce(t.defined_success, false) as verifiable,
        coalesce(t.formula_disclosed, false) as formula_disclosed,
        coalesce(t.reward_levels, 0) as reward_levels,
        coalesce(t.partial_levels, 0) as partial_levels,
        coalesce(f.solve_rate between p.band_lo and p.band_hi, false) as in_band
    from accepted_envs e
    cross join params p
    join run_spans s using (run)
    left join gate_ok g using (run, env_id)
    left join episode_facts f using (run, env_id)
    left join turn_facts t using (run, env_id)
),

final as (
    select
        run,
        phase,
        count(*) as envs,
        avg(well_defined::double) as well_defined,
        avg(verifiable::double) as verifiable,
        avg(formula_disclosed::double) as formula_disclosure,
        avg(reward_levels) as reward_levels,
        avg(partial_levels) as partial_levels,
        avg(in_band::double) as in_band
    from per_env
    group by run, phase
)

select * from final
order by run, phase
