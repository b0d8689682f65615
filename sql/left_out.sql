-- left_out: the Agent plays of a step that grpo left out of training because their samples could not be
-- assembled, per cause (grpo.max_left_out_share; the stage fails past that share of the step's plays).
--
-- broken_prefix: a turn's prompt did not begin with the previous prompt and completion (chat mode on a
-- template that re-renders the history, or re-tokenization drift); missing_tokens: a call without token
-- ids or log-probs (a server that was not asked for them); missing_call: a turn whose llm_calls row is
-- missing. From the agent rows of train_metrics; rows written before schema version 2 read as 0. One row
-- per trained step, also where nothing was left out.
select
    run,
    step,
    coalesce(sum(left_out_broken_prefix), 0) as broken_prefix,
    coalesce(sum(left_out_missing_tokens), 0) as missing_tokens,
    coalesce(sum(left_out_missing_call), 0) as missing_call,
    coalesce(sum(left_out_broken_prefix + left_out_missing_tokens + left_out_missing_call), 0) as left_out,
    sum(samples) as samples
from train_metrics
where role = 'agent'
group by run, step
order by run, step
