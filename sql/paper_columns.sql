-- paper_columns: which benchmarks make each column of the paper's downstream tables (SPADE §4) and which
-- metric of eval_scores each reads; the one place the tables' suites are named.
--
-- suite_group games is Table 1 (and Table 3, the ablations, on the same columns): AIME 2025 and 2026
-- (avg@64), GPQA-Diamond (avg@8), LiveCodeBench-v6 (pass@1, the mean over generations) and the four
-- Reasoning-Gym categories (mean score); tools is Table 2: BFCL v4 multi-turn (the unweighted mean of its
-- four categories, as BFCL's Multi Turn Overall Acc), τ²-bench (pass^1, the mean over its three
-- domains) and ACEBench-Agent (the mean of its two agent categories' end-to-end accuracy). A column of
-- several benchmarks is their equal-weight mean and needs every one of them. The benchmark names are
-- what `spade eval import` writes (bfcl_v4_*, tau2_*, acebench_*, livecodebench_v6, reasoning_gym_*) and
-- what `spade bench import --name` should be given for the suites spade evaluates itself (aime25,
-- aime26, gpqa_diamond; livecodebench_v6 either way).
with

columns as (
    select * from (values
        ('games', 1, 'AIME 2025', 'aime25', 'avg_at_k'),
        ('games', 2, 'AIME 2026', 'aime26', 'avg_at_k'),
        ('games', 3, 'GPQA-Diamond', 'gpqa_diamond', 'avg_at_k'),
        ('games', 4, 'LiveCodeBench-v6', 'livecodebench_v6', 'avg_at_k'),
        ('games', 5, 'RG Math', 'reasoning_gym_math', 'avg_at_k'),
        ('games', 6, 'RG Algorithmic', 'reasoning_gym_algorithmic', 'avg_at_k'),
        ('games', 7, 'RG Cognition', 'reasoning_gym_cognition', 'avg_at_k'),
        ('games', 8, 'RG Logic', 'reasoning_gym_logic', 'avg_at_k'),
        ('tools', 1, 'BFCL v4 multi-turn', 'bfcl_v4_multi_turn_base', 'avg_at_k'),
        ('tools', 1, 'BFCL v4 multi-turn', 'bfcl_v4_multi_turn_miss_func', 'avg_at_k'),
        ('tools', 1, 'BFCL v4 multi-turn', 'bfcl_v4_multi_turn_miss_param', 'avg_at_k'),
        ('tools', 1, 'BFCL v4 multi-turn', 'bfcl_v4_multi_turn_long_context', 'avg_at_k'),
        ('tools', 2, 'τ²-bench', 'tau2_airline', 'pass_at_1'),
        ('tools', 2, 'τ²-bench', 'tau2_retail', 'pass_at_1'),
        ('tools', 2, 'τ²-bench', 'tau2_telecom', 'pass_at_1'),
        ('tools', 3, 'ACEBench-Agent', 'acebench_agent_multi_step', 'avg_at_k'),
        ('tools', 3, 'ACEBench-Agent', 'acebench_agent_multi_turn', 'avg_at_k')
    ) as t (suite_group, column_index, column_name, bench, metric)
),

final as (
    select suite_group, column_index::integer as column_index, column_name, bench, metric
    from columns
)

select * from final
order by suite_group, column_index, bench
