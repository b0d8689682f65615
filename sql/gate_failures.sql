-- gate_failures: gate failures by check and pool step (SPADE §2.3: static, load, instantiate, reset,
-- smoke, trivial, hint_leak and the tool-use checks), the "failures by check" view of the acceptance audit.
--
-- A failure is a check that ran and did not pass (skipped checks, which follow a failure, are not counted).
-- failure_share = failures / candidates that ran the check.
with

checked as (
    select run, step, "check" as gate_check, passed, skipped
    from gate_results
),

final as (
    select
        run,
        step,
        gate_check,
        count(*) filter (where not skipped) as ran,
        count(*) filter (where not skipped and not passed) as failures,
        count(*) filter (where not skipped and not passed) / nullif(count(*) filter (where not skipped), 0)::double
            as failure_share
    from checked
    group by run, step, gate_check
)

select * from final
order by run, step, gate_check
