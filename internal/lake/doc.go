// Package lake stores SPADE's tables as Parquet partitions in a local directory or an S3 bucket, and
// commits what one writer wrote atomically (docs/architecture.md, "The lake").
//
// Layout (every path rule lives in paths.go):
//
//	<lake>/runs/<run>/run.json
//	<lake>/_lake.json                                            (the layout version, layout.go)
//	<lake>/runs/<run>/<table>/step=<n>/part-gGGGGGG-SSSS-<writer>-KK.parquet
//	<lake>/runs/<run>/_commits/step=<n>/<stage>/gGGGGGG.json  (the commit records, records.go)
//	<lake>/runs/<run>/_commits/step=<n>/<stage>/_shards/gGGGGGG/shard-SSSS-of-NNNN.json
//	<lake>/runs/<run>/<table>/step=<n>/fragment-<name>/...   (same layout, one fragment)
//	<lake>/runs/<run>/_jobs/<name>.json  (an executor's submission records, jobs.go)
//	<lake>/corpora/<name>/corpus/step=0/{part-*.parquet,_manifest.json}
//	<lake>/pools/<name>/pools/step=0/...        (an imported env pool, lake.PoolKey)
//
// Steps are unpadded (step=2) and fragments carry no second partition key, so a hive reader of
// <table>/**/*.parquet types step as an integer; it also sees uncommitted and superseded part files,
// which only spade's readers and `spade lake export` leave out.
//
// One write path (txn.go): every write goes into a Txn and takes it as an argument (WriteRows). A Txn
// uploads part files and makes nothing visible until Commit, which makes everything it wrote visible
// with one conditional put (If-None-Match: * on S3, link(2) locally), so a killed writer leaves nothing
// visible and of two writers exactly one commits (the other gets ErrConcurrentWriter and its parts are
// removed). A run's transaction (a stage at a step, opened by stage.Execute; or a writer outside stages
// under a stage name of its own) commits runs/<run>/_commits/step=<n>/<stage>/gGGGGGG.json, listing
// every partition with its manifest. The newest generation present is the committed one; a forced
// transaction commits generation g+1, so readers see the old rows of every table or the new ones, never
// a mix. Shard processes each keep a marker under the record's _shards/; the last complete one commits.
// A corpus transaction (TxnSpec.Corpus: a corpus, benchmark or pool import, one partition without
// steps) commits the partition's own _manifest.json; a replacement first claims its generation with a
// conditional put of _shards/gGGGGGG/_commit.json. Verify and Vacuum (verify.go) check referenced files
// and remove orphans. Upgrade (layout.go) carries older lakes forward: it renames layout 1's folders
// and turns a run partition's _manifest.json (layouts 1 and 2) into a commit record.
//
// Fragments: a step may have named fragments besides its plain partition, each a partition of its own,
// so independent writers of one step (the llm_calls of generate, the gate and each rollout shard) never
// replace each other's rows. ReadStep reads a step's plain partition and every fragment; Partitions and
// LocalFiles list them all.
//
// ReadRows verifies every file's sha256 against the manifest. For S3, files are fetched into a
// content-addressed local cache keyed by that sha256, only after their checksum matched (a corrupt
// download is fetched again), so DuckDB reads verified local files and a second query downloads nothing.
// DuckDB reads a local lake's files in place, unhashed: hashing every file on every query would cost more
// than the query, and the local disk is trusted as DuckDB's own files would be.
package lake
