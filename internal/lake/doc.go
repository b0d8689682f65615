// Package lake stores SPADE's tables as Parquet partitions in a local directory or an S3 bucket, and
// commits each partition atomically (docs/architecture.md, "The lake").
//
// Layout (every path rule lives in paths.go):
//
//	<lake>/runs/<run>/run.json
//	<lake>/_lake.json                                            (the layout version, layout.go)
//	<lake>/runs/<run>/<table>/step=<n>/part-gGGGGGG-SSSS-<writer>-KK.parquet
//	<lake>/runs/<run>/<table>/step=<n>/_shards/gGGGGGG/shard-SSSS-of-NNNN.json
//	<lake>/runs/<run>/<table>/step=<n>/_manifest.json
//	<lake>/runs/<run>/<table>/step=<n>/fragment-<name>/...   (same layout, one fragment)
//	<lake>/runs/<run>/_commits/step=<n>/<stage>/gGGGGGG.json  (the stage commit records, records.go)
//	<lake>/runs/<run>/_jobs/<name>.json  (an executor's submission records, jobs.go)
//	<lake>/corpora/<name>/corpus/step=0/...
//	<lake>/pools/<name>/pools/step=0/...        (an imported env pool, lake.PoolKey)
//
// Steps are unpadded (step=2) and fragments carry no second partition key, so a hive reader of
// <table>/**/*.parquet types step as an integer; it also sees uncommitted and superseded part files,
// which only spade's readers and `spade lake export` leave out.
//
// Commit protocol: a writer uploads its part files first, then a shard marker listing them (name, rows,
// bytes, sha256), and when every shard's marker is present, the partition's _manifest.json, created with
// a conditional put (If-None-Match: * on S3, link(2) locally) so exactly one writer commits. A partition
// without a manifest does not exist for any reader, so a killed writer leaves nothing visible. Re-running
// a committed partition returns ErrCommitted unless Force is set. A forced write is a new generation: it
// uploads new parts, claims the generation with a conditional put of _shards/gGGGGGG/_commit.json (so of
// two forced writers one wins) and replaces the manifest in one atomic put, so a reader sees the old or
// the new partition, never a mix (ReadRows re-reads the manifest when the old parts vanish under it).
// After a commit, the committer deletes part files of its generation or older that the manifest does not
// list (the leftovers of killed writers and replaced generations).
//
// Stage commits (txn.go, the records in records.go): inside stage.Execute every write of the stage's run
// and step joins a Txn (WithTxn) and only uploads; one conditional put of
// runs/<run>/_commits/step=<n>/<stage>/gGGGGGG.json then makes every partition the stage wrote visible
// at once. The newest record generation is the committed one; a partition is committed when it
// references it, else by its own _manifest.json (the protocol above, for corpora, writes outside stages
// and lakes written without records), the higher partition generation winning. Verify and Vacuum
// (verify.go) check referenced files and remove orphans.
//
// Fragments: a step may have named fragments besides its plain partition, each a partition of its own
// (its manifest, shards, generations, ErrCommitted and Force), so independent writers of one step (the
// llm_calls of generate, the gate and each rollout shard) never replace each other's rows, which a
// merge through a forced rewrite would (last writer wins across processes). ReadStep reads a step's
// plain partition and every fragment; Partitions and LocalFiles list them all.
//
// ReplaceShard: a shard writer re-run after its partition committed (killed between two commits of a
// stage) commits a new generation listing its new parts and the other shards' committed parts, claimed
// like a forced write, so it replaces its own rows and nothing else.
//
// ReadRows verifies every file's sha256 against the manifest. For S3, files are fetched into a
// content-addressed local cache keyed by that sha256, only after their checksum matched (a corrupt
// download is fetched again), so DuckDB reads verified local files and a second query downloads nothing.
// DuckDB reads a local lake's files in place, unhashed: hashing every file on every query would cost more
// than the query, and the local disk is trusted as DuckDB's own files would be.
package lake
