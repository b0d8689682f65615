-- episode_outcomes: every episode with whether it counts in its env's rates and its outcome, the one
-- definition that env_outcomes and every audit model read (and that the Designer's reward uses in Go:
-- internal/outcome, under the same run settings).
--
-- counted: the episode's ended_by is not in outcome.exclude_ended_by (default env_error,timeout: the env
-- failed, not the Agent). outcome: the episode's outcome o, by outcome.value: its return (default) or its
-- success as 0/1. An env's solve rate is the success fraction of its counted episodes, its r̄ their mean
-- outcome.
--
-- One row per episode, keyed by (run, step, env_id, hinted, episode_index); episode_id is left out so the
-- model also runs over the cached episodes of `spade metrics` (internal/analytics.OpenCached).
--
-- Parameters are DuckDB variables that `spade metrics` sets from the run config; by hand, `set variable`
-- them first, or the defaults apply: outcome_exclude_ended_by 'env_error,timeout' (comma-separated; ''
-- counts every episode), outcome_value 'return'.
with

params as (
    select
        string_split(coalesce(getvariable('outcome_exclude_ended_by'), 'env_error,timeout'), ',') as excluded,
        coalesce(getvariable('outcome_value'), 'return') as outcome_value
),

played as (
    select run, step, pool_step, env_id, skill, hinted, "index" as episode_index, success, "return" as episode_return, ended_by
    from episodes
),

final as (
    select
        e.run,
        e.step,
        e.pool_step,
        e.env_id,
        e.skill,
        e.hinted,
        e.episode_index,
        e.success,
        e.episode_return,
        e.ended_by,
        not list_contains(list_transform(p.excluded, x -> trim(x)), e.ended_by) as counted,
        case when p.outcome_value = 'success' then e.success::double else e.episode_return end as outcome
    from played e
    cross join params p
)

select * from final
order by run, step, env_id, hinted, episode_index
