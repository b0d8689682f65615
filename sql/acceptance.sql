-- acceptance: gate acceptance per pool step (SPADE §2.3 and §3.4; the acceptance rate the paper says the
-- Figure 6 band share mixes in, and the "cost per accepted env" of its cost accounting).
--
-- slots are the sampled slots of the refresh (samples), candidates every Designer attempt (candidates),
-- accepted the envs of the pool (envs). acceptance = accepted / slots (a slot that never passed counts as
-- a miss); attempt_acceptance = accepted / candidates; attempts_per_slot = candidates / slots.
with

slots as (
    select run, step, count(*) as slots
    from samples
    group by run, step
),

attempts as (
    select run, step, count(*) as candidates, count(*) filter (where parse_error <> '') as parse_errors
    from candidates
    group by run, step
),

accepted as (
    select run, pool_step as step, count(*) as accepted, avg(attempt) as mean_accepted_attempt
    from envs
    group by run, pool_step
),

final as (
    select
        s.run,
        s.step,
        s.slots,
        coalesce(a.candidates, 0) as candidates,
        coalesce(a.parse_errors, 0) as parse_errors,
        coalesce(e.accepted, 0) as accepted,
        coalesce(e.accepted, 0) / s.slots::double as acceptance,
        coalesce(e.accepted, 0) / nullif(a.candidates, 0)::double as attempt_acceptance,
        coalesce(a.candidates, 0) / s.slots::double as attempts_per_slot,
        e.mean_accepted_attempt
    from slots s
    left join attempts a using (run, step)
    left join accepted e using (run, step)
)

select * from final
order by run, step
