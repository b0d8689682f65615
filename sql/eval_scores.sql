-- eval_scores: the Agent's downstream scores per benchmark and weights (SPADE §4, Tables 1-3 and
-- Figure 12 left; the avg@64 of AIME, pass@1 of GPQA-Diamond and LiveCodeBench, BFCL accuracy).
--
-- One row per run, step, benchmark and weights version: items, samples per item (K, the fewest any item
-- has), mean score over every sample, avg@K (the mean of the per-item means, so an item with more
-- samples weighs no more), its standard error over items (sample std of the per-item means / sqrt(n)),
-- pass@1 and pass@K with the unbiased estimator 1 − C(n−c, k) / C(n, k) per item (n samples, c correct,
-- score 1 counted as correct; Chen et al. 2021), averaged over items.
with

samples as (
    select run, step, bench, kind, weights_version, item_id, score
    from eval_results
),

per_item as (
    select
        run, step, bench, kind, weights_version, item_id,
        count(*) as n,
        count(*) filter (where score >= 1) as c,
        avg(score) as item_mean
    from samples
    group by all
),

per_bench as (
    select
        run, step, bench, kind, weights_version,
        count(*) as items,
        min(n) as k,
        sum(item_mean * n) / sum(n) as mean_score,
        avg(item_mean) as avg_at_k,
        coalesce(stddev_samp(item_mean) / sqrt(count(*)), 0) as stderr,
        avg(c::double / n) as pass_at_1,
        list({'n': n, 'c': c}) as counts
    from per_item
    group by all
),

final as (
    select
        run, step, bench, kind, weights_version, items, k, mean_score, avg_at_k, stderr, pass_at_1,
        list_avg(list_transform(counts, x ->
            case when x.n - x.c < k then 1.0
                 else 1.0 - exp(lgamma(x.n - x.c + 1) - lgamma(k + 1) - lgamma(x.n - x.c - k + 1)
                               - (lgamma(x.n + 1) - lgamma(k + 1) - lgamma(x.n - k + 1)))
            end)) as pass_at_k
    from per_bench
)

select * from final
order by run, bench, step, weights_version
