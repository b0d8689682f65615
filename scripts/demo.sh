#!/usr/bin/env bash
# The demo: a fresh local lake, the testdata corpus, and a look at it through `spade query`.
# Later stages extend it to the whole SPADE loop replayed offline.
set -euo pipefail
lake=${1:-./lake}
run=${2:-demo}
spade=./bin/spade
export SPADE_LAKE=$lake
rm -rf "$lake/runs/$run"
$spade --run "$run" init --preset qwen3-30b-a3b-games --set sample.corpus=testdata
$spade corpus import --name testdata testdata/corpus/corpus.parquet testdata/corpus/corpus.jsonl
echo
echo "== corpus by domain =="
$spade --run "$run" query "select domain, count(*) as documents, round(avg(length(text))) as avg_chars from corpus group by all order by domain"
echo
echo "== lake =="
$spade lake ls
