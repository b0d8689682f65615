-- gate_contradictions: the accepted envs whose rollout plays contradict what the gate found (a program
-- that can tell the gate from rollout passes the gate and is then trivial or leaky in rollout).
--
-- trivial: every unhinted play of the env (at least 4) succeeded at its first turn, where the gate's
-- trivial check found a probe that does not solve it at once; hint_leak: every hinted play (at least 4)
-- succeeded at its first turn while fewer than half the unhinted ones did, where the gate's hint_leak
-- check found that neither the hint nor a number in it solves it. An env the check did not run on
-- (gate.checks = official has neither check) is listed with gate_checked false: rollout alone says so.
-- One row per (run, env, kind); none for an env rollout does not contradict.
with

plays as (
    select run, env_id, pool_step, hinted, count(*) as plays,
        count(*) filter (where success and turns = 1) as solved_at_once
    from episodes
    group by run, env_id, pool_step, hinted
),

gate as (
    select run, env_id,
        bool_or("check" = 'trivial' and passed) as trivial_passed,
        bool_or("check" = 'hint_leak' and passed) as hint_leak_passed
    from gate_results
    group by run, env_id
),

sides as (
    select u.run, u.env_id, u.pool_step,
        u.plays as unhinted_plays, u.solved_at_once as unhinted_solved_at_once,
        coalesce(h.plays, 0) as hinted_plays, coalesce(h.solved_at_once, 0) as hinted_solved_at_once
    from plays u
    left join plays h on h.run = u.run and h.env_id = u.env_id and h.pool_step = u.pool_step and h.hinted
    where not u.hinted
),

flagged as (
    select s.*, 'trivial' as kind, coalesce(g.trivial_passed, false) as gate_checked
    from sides s left join gate g on g.run = s.run and g.env_id = s.env_id
    where s.unhinted_plays >= 4 and s.unhinted_solved_at_once = s.unhinted_plays
    union all
    select s.*, 'hint_leak' as kind, coalesce(g.hint_leak_passed, false) as gate_checked
    from sides s left join gate g on g.run = s.run and g.env_id = s.env_id
    where s.hinted_plays >= 4 and s.hinted_solved_at_once = s.hinted_plays
        and s.unhinted_solved_at_once * 2 < s.unhinted_plays
),

final as (
    select run, env_id, pool_step, kind, gate_checked, unhinted_plays, unhinted_solved_at_once,
        hinted_plays, hinted_solved_at_once
    from flagged
)

select * from final
order by run, pool_step, env_id, kind
