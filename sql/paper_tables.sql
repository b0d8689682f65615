-- paper_tables: the Agent's downstream scores as the columns of the paper's Tables 1-3 (SPADE §4), per
-- run and checkpoint, and which checkpoint each run's row shows.
--
-- One row per run, checkpoint (step and weights version, as eval_scores has them), suite group (games:
-- Tables 1 and 3; tools: Table 2, see paper_columns) and column: the column's score in [0, 1] (the
-- equal-weight mean of its benchmarks' metric, NULL unless every one of them was evaluated at that
-- checkpoint), then the checkpoint's equal-weight average over the columns it has (NULL when none),
-- how many it has of how many, and whether it is the run's selected checkpoint for the group: the one
-- with the most columns, then the highest average, then the latest step. That choice is made offline,
-- on the test suites themselves, as the paper reports its best checkpoint. A checkpoint appears for a
-- group once any benchmark of the group was evaluated at it.
with

columns as (
    select suite_group, column_index, column_name, bench, metric from paper_columns
),

scores as (
    select run, step, weights_version, bench, avg_at_k, pass_at_1 from eval_scores
),

checkpoints as (
    select distinct s.run, s.step, s.weights_version, c.suite_group
    from scores s
    join columns c on c.bench = s.bench
),

parts as (
    select
        k.run, k.step, k.weights_version, c.suite_group, c.column_index, c.column_name, c.bench,
        case c.metric when 'pass_at_1' then s.pass_at_1 else s.avg_at_k end as value
    from checkpoints k
    join columns c on c.suite_group = k.suite_group
    left join scores s
        on s.run = k.run and s.step = k.step and s.weights_version = k.weights_version and s.bench = c.bench
),

per_column as (
    select
        run, step, weights_version, suite_group, column_index, column_name,
        count(*) as benches,
        count(value) as benches_scored,
        case when count(value) = count(*) then avg(value) end as score
    from parts
    group by all
),

per_checkpoint as (
    select
        run, step, weights_version, suite_group,
        count(*) as columns,
        count(score) as columns_scored,
        avg(score) as average
    from per_column
    group by all
),

ranked as (
    select
        *,
        row_number() over (
            partition by run, suite_group
            order by columns_scored desc, average desc nulls last, step desc, weights_version desc
        ) = 1 as selected
    from per_checkpoint
),

final as (
    select
        c.run, c.step, c.weights_version, c.suite_group, c.column_index, c.column_name, c.benches,
        c.benches_scored, c.score, r.average, r.columns_scored, r.columns, r.selected
    from per_column c
    join ranked r using (run, step, weights_version, suite_group)
)

select * from final
order by run, suite_group, step, weights_version, column_index
