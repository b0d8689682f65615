-- repeated_envs: runs of consecutive accepted environments with the same class name or the same code hash
-- (SPADE §3.4, Figure 8 right: the no-corpus variant generated RotatingMazeEnv 41 times in a row between
-- steps 290 and 312).
--
-- Generations are ordered by (pool_step, slot); a streak is a maximal run of consecutive generations that
-- share the key; only streaks of length >= 2 are listed, longest first. key_kind is class_name or
-- code_sha256.
with

generations as (
    select
        run,
        pool_step,
        slot,
        class_name,
        code_sha256,
        row_number() over (partition by run order by pool_step, slot) as position
    from envs
),

keyed as (
    select run, pool_step, position, 'class_name' as key_kind, class_name as key from generations
    union all
    select run, pool_step, position, 'code_sha256' as key_kind, code_sha256 as key from generations
),

islands as (
    select
        *,
        position - row_number() over (partition by run, key_kind, key order by position) as island
    from keyed
),

streaks as (
    select
        run,
        key_kind,
        key,
        count(*) as streak,
        min(pool_step) as first_step,
        max(pool_step) as last_step
    from islands
    group by run, key_kind, key, island
),

final as (
    select * from streaks where streak >= 2
)

select * from final
order by run, streak desc, key_kind, first_step, key
