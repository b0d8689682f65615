# The demo (`make demo`): the whole SPADE loop, replayed offline on a fresh local lake.
#
#   1. the testdata corpus is imported (under the name the recording's config uses);
#   2. the demo run is created from $SAMPLE_RUN/replay.json (default testdata/sample-run: a small run
#      recorded against the scripted model, kept as a lake), whose base URLs point both roles at the
#      replay backend (`replay:<run>@<lake>`, same seed, so every request finds its recorded answer);
#   3. `spade run` replays every stage: sample, generate, the gate in the real sandbox (regenerating
#      broken candidates through the Designer), rollout in the real sandbox, regret and the memory, GRPO
#      batches (trainer none);
#   4. a summary through `spade query`: accepted envs per skill, solve rates with and without the hint,
#      regret, the learnable-band share, the memory and the batches.
#
# Without a recording it stops after the corpus and the first pool's slots (`spade sample`).
set -euo pipefail
lake=${1:-./lake}
run=${2:-demo}
recording=${SAMPLE_RUN:-testdata/sample-run}
spade=${SPADE:-./bin/spade}
export SPADE_LAKE=$lake
mkdir -p "$lake"
log="$lake/demo-$run.log"
q() { $spade --run "$run" query "$1"; echo; }

rm -rf "$lake/runs/$run"
if [ ! -f "$recording/replay.json" ]; then
  $spade --run "$run" init --preset qwen3-30b-a3b-games --set sample.corpus=testdata
  $spade corpus import --name testdata testdata/corpus/corpus.parquet testdata/corpus/corpus.jsonl
  echo
  echo "== corpus by domain =="
  q "select domain, count(*) as documents, round(avg(length(text))) as avg_chars from corpus group by all order by domain"
  $spade --run "$run" sample --step 0 2>>"$log"
  echo "== the first pool's slots (3 of 6 skills, one fresh document each) =="
  q "select skill, count(*) as slots, count(distinct doc_id) as documents from samples group by skill order by skill"
  echo "(no recording in $recording: set SAMPLE_RUN=DIR to a directory with replay.json and runs/<run>/)"
  echo "== next: the slots in your own SQL =="
  echo "$spade --lake $lake --run $run query \"select skill, doc_id from samples\""
  exit 0
fi

config="$recording/replay.json"
key() { grep -o "\"$1\": *[^,}]*" "$config" | head -n1 | sed -E 's/^[^:]*: *//; s/^"//; s/"$//'; }
corpus=$(key sample.corpus)
quota=$(key sample.envs_per_step)
recorded=$(ls "$recording/runs" | head -n1)
last=$(ls "$recording/runs/$recorded/episodes" | sed -E 's/^step=0*([0-9])/\1/' | sort -n | tail -n1)

echo "== replaying $recording (run $recorded, steps 0-$last) as run $run in $lake; stage logs in $log =="
$spade corpus import --name "${corpus:-default}" testdata/corpus/corpus.jsonl
$spade --run "$run" init --preset qwen3-4b-games --config "$config"
$spade --run "$run" run --steps "0-$last" 2>"$log"
echo

echo "== accepted envs per skill (gate: candidates checked, regenerations) =="
q "with accepted as (select skill, count(*) as envs from envs group by skill),
     tried as (select skill, count(*) as candidates, count(*) filter (where attempt > 1) as regenerated from candidates group by skill)
select skill, envs as accepted_envs, candidates, regenerated from accepted join tried using (skill) order by skill"
echo "== solve rates and returns per skill, without and with the hint (env errors excluded) =="
q "select skill, count(*) filter (where not hinted) as episodes,
       round(avg(success::int) filter (where not hinted), 3) as solve_rate,
       round(avg(success::int) filter (where hinted), 3) as solve_rate_hint,
       round(avg(return) filter (where not hinted), 3) as mean_return,
       round(avg(return) filter (where hinted), 3) as mean_return_hint
from episodes where ended_by <> 'env_error' group by skill order by skill"
echo "== Designer rewards at each pool end (regret_anchor, final over the pool's window) =="
q "select pool_step, count(*) filter (where excluded = '') as envs, count(*) filter (where excluded <> '') as excluded,
       round(avg(regret) filter (where excluded = ''), 3) as mean_regret,
       count(*) filter (where regret > 0) as positive_regret,
       round(avg(anchor) filter (where excluded = ''), 3) as mean_anchor,
       round(avg(reward) filter (where excluded = ''), 3) as mean_reward
from designer_rewards where final and variant = 'regret_anchor' group by pool_step order by pool_step"
echo "== learnable-band share (no-hint solve rate in [0.2, 0.8]) per 16-step window, over the full quota of ${quota:-24} envs per step =="
q "with per_step as (
  select step, count(*) filter (where excluded = '' and solve_rate between 0.2 and 0.8) as in_band
  from designer_rewards where not final and variant = 'regret_anchor' group by step)
select (step // 16) * 16 as window_start, count(*) as steps, sum(in_band) as envs_in_band,
       round(sum(in_band) / (count(*) * ${quota:-24}), 3) as band_share
from per_step group by all order by window_start"
echo "== memory after the last pool end, by label =="
q "select label, count(*) as envs, round(avg(regret), 3) as mean_regret, round(avg(solve_rate), 3) as mean_solve_rate
from memory where step = (select max(step) from memory) group by label order by label"
echo "== GRPO batches =="
q "select role, count(distinct step) as steps, count(*) as samples, count(distinct step || '/' || batch) as batches,
       sum(len(response_ids)) as response_tokens, round(stddev(advantage), 3) as advantage_std
from grpo_batches group by role order by role"
echo "== next: what the run made, in the viewer, a report or your own SQL =="
echo "$spade --lake $lake view                                   # the viewer, at http://127.0.0.1:8600"
echo "$spade --lake $lake --run $run report --out report.html    # one self-contained HTML page of charts"
echo "$spade --lake $lake --run $run query \"select skill, avg(success::int) as solved from episodes where not hinted group by all\""
