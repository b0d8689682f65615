-- vendi_by_window: diversity of the accepted environments per metrics_window-step window: the Vendi score
-- exp(−Σ λ log λ) over the eigenvalues of K/n (K the cosine similarity of the env embeddings), Vendi/n,
-- and the mean pairwise cosine distance (SPADE §3.4, Table 8 columns; Figure 7's embeddings).
--
-- Reads the embeddings table (written by `spade metrics --embed`), one embedder at a time: variable
-- embedder, default 'tfidf_lsa'. Windows of different sizes are not comparable through raw Vendi (it grows
-- with n); use vendi_per_n here and the calibrated comparison of `spade ablate` across runs.
with

params as (
    select
        coalesce(getvariable('metrics_window'), 16)::bigint as window_steps,
        coalesce(getvariable('embedder'), 'tfidf_lsa')::varchar as embedder
),

vectors as (
    select m.run, m.step as pool_step, m.vector
    from embeddings m
    cross join params p
    where m.embedder = p.embedder
),

final as (
    select
        v.run,
        v.pool_step // p.window_steps as window_index,
        count(*) as envs,
        vendi(list(v.vector)) as vendi,
        vendi_per_n(list(v.vector)) as vendi_per_n,
        mean_cosine_distance(list(v.vector)) as mean_cosine_distance
    from vectors v
    cross join params p
    group by all
)

select * from final
order by run, window_index
