package lake

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Every path rule of the lake lives in this file.

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidName reports whether s may name a run or a corpus: letters, digits, '.', '_' and '-', starting
// with a letter or digit, at most 128 characters.
func ValidName(s string) error {
	if !nameRE.MatchString(s) {
		return fmt.Errorf("invalid name %q: use letters, digits, '.', '_' and '-' (starting with a letter or digit)", s)
	}
	return nil
}

// PartitionKey names one partition: a table of a run (or of a corpus) at a step.
type PartitionKey struct {
	// Run is the run name; empty for corpus partitions.
	Run string
	// Corpus names the collection of a table that lives outside runs: the corpus's name for the corpus
	// table, the pool's name for the pools table (an imported static pool of env programs).
	Corpus string
	// Table is the table name (see package schemas).
	Table string
	// Step is the partition's step (0 for the corpus).
	Step int64
	// Fragment, when set, names one fragment of the step: a partition of its own below the step's
	// directory, committed with the same protocol, so several writers (stages, or a stage's shard
	// processes) add rows to one step without replacing each other's. Readers of a step that has
	// fragments use ReadStep; Partitions and LocalFiles list every fragment.
	Fragment string
}

// String formats the key for messages.
func (k PartitionKey) String() string {
	if k.Corpus != "" && k.Table == PoolsTable {
		return fmt.Sprintf("pool %s", k.Corpus)
	}
	if k.Corpus != "" {
		return fmt.Sprintf("corpus %s", k.Corpus)
	}
	if k.Fragment != "" {
		return k.Run + "/" + k.Table + "/" + stepSegment(k.Step) + "/" + fragmentPrefix + k.Fragment
	}
	return k.Run + "/" + k.Table + "/" + stepSegment(k.Step)
}

// tableDir is the directory of every partition of the key's table.
func (k PartitionKey) tableDir() string {
	if k.Corpus != "" && k.Table == PoolsTable {
		return poolsPrefix + k.Corpus + "/" + k.Table
	}
	if k.Corpus != "" {
		return "corpora/" + k.Corpus + "/" + k.Table
	}
	return "runs/" + k.Run + "/" + k.Table
}

// stepDir is the directory of the key's step (its plain partition), without a trailing slash.
func (k PartitionKey) stepDir() string { return k.tableDir() + "/" + stepSegment(k.Step) }

// stepSegment is a step's directory name: step=<n> without padding, so a hive reader (DuckDB's
// hive_partitioning, Spark, Polars) types the step as an integer. Lakes written before layout 2 padded it
// to six digits (step=000002); `spade lake upgrade` renames them (layout.go).
func stepSegment(step int64) string { return "step=" + strconv.FormatInt(step, 10) }

// parseStepSegment reads a step directory name, padded (layout 1) or not.
func parseStepSegment(s string) (int64, bool) {
	digits, found := strings.CutPrefix(s, "step=")
	if !found || digits == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n >= 0
}

// Dir is the partition's directory key (without a trailing slash): the step's directory, or
// step=<n>/fragment-<name> below it for a fragment.
func (k PartitionKey) Dir() string {
	if k.Fragment != "" {
		return k.stepDir() + "/" + fragmentPrefix + k.Fragment
	}
	return k.stepDir()
}

// fragmentPrefix starts the directory name of a fragment below its step's directory. It has no '=', so a
// hive reader globbing <table>/**/*.parquet sees the step as the only partition key of every file, the
// plain partition's and the fragments' alike (layout 1 named it fragment=<name>, a second key that only
// some files had, which DuckDB refuses as a hive partition mismatch).
const fragmentPrefix = "fragment-"

// ValidFragment reports whether s may name a fragment: the rules of ValidName.
func ValidFragment(s string) error {
	if !nameRE.MatchString(s) {
		return fmt.Errorf("invalid fragment name %q: use letters, digits, '.', '_' and '-' (starting with a letter or digit)", s)
	}
	return nil
}

// ManifestKey is the key of the partition's manifest.
func (k PartitionKey) ManifestKey() string { return k.Dir() + "/_manifest.json" }

// partKey is the key of one part file written by one writer of one shard of one generation. The
// generation in the name lets a committer delete the leftovers of older generations without touching the
// parts a writer of a newer generation is uploading; the writer id keeps concurrent writers apart. Neither
// is in the file's content, so a re-run writes byte-identical files.
func (k PartitionKey) partKey(generation, shard int, writer string, chunk int) string {
	return fmt.Sprintf("%s/part-g%06d-%04d-%s-%02d.parquet", k.Dir(), generation, shard, writer, chunk)
}

// partGeneration extracts the generation from a part file's name; ok is false for names that are not
// part files.
func partGeneration(name string) (generation int, ok bool) {
	name = name[strings.LastIndex(name, "/")+1:]
	rest, found := strings.CutPrefix(name, "part-g")
	if !found || len(rest) < 6 {
		return 0, false
	}
	n, err := strconv.Atoi(rest[:6])
	return n, err == nil
}

// shardMarkerSuffix matches the markers of a given shard count.
func shardMarkerSuffix(shards int) string { return fmt.Sprintf("-of-%04d.json", shards) }

// runConfigKey is the key of a run's run.json.
func runConfigKey(run string) string { return "runs/" + run + "/run.json" }

// runsPrefix is the prefix under which every run lives.
const runsPrefix = "runs/"

// corporaPrefix is the prefix under which every corpus lives.
const corporaPrefix = "corpora/"

// poolsPrefix is the prefix under which every imported env pool lives.
const poolsPrefix = "pools/"

// parseManifestKey extracts the table, step and fragment ("" for the plain partition) from a manifest
// key below the run ("runs/<run>/"): <table>/step=<n>/_manifest.json or
// <table>/step=<n>/fragment-<name>/_manifest.json.
func parseManifestKey(rel string) (table string, step int64, fragment string, ok bool) {
	parts := strings.Split(rel, "/")
	if len(parts) < 3 || len(parts) > 4 || parts[len(parts)-1] != "_manifest.json" {
		return "", 0, "", false
	}
	n, ok := parseStepSegment(parts[1])
	if !ok {
		return "", 0, "", false
	}
	if len(parts) == 4 {
		name, found := strings.CutPrefix(parts[2], fragmentPrefix)
		if !found || ValidFragment(name) != nil {
			return "", 0, "", false
		}
		fragment = name
	}
	return parts[0], n, fragment, true
}

// stepPrefix is the prefix of every object of one step of a run's table: its plain partition and its
// fragments.
func stepPrefix(run, table string, step int64) string {
	return PartitionKey{Run: run, Table: table, Step: step}.stepDir() + "/"
}

// cachePath is a cached file's path below the cache root, keyed by content.
func cachePath(sha string) string { return sha[:2] + "/" + sha + ".parquet" }

// commitsPrefix holds a run's stage commit records: one record per stage and step names every partition
// the stage committed there (see records.go).
func commitsPrefix(run string) string { return runsPrefix + run + "/_commits/" }

// commitStepPrefix holds the commit records of every stage of one step of a run.
func commitStepPrefix(run string, step int64) string {
	return commitsPrefix(run) + stepSegment(step) + "/"
}

// recordKey is the key of generation gen of a stage's commit record at a step. A record is created once
// (a conditional put) and never changed: the newest generation present is the committed one.
func recordKey(run, stage string, step int64, gen int) string {
	return fmt.Sprintf("%s%s/g%06d.json", commitStepPrefix(run, step), stage, gen)
}

// txnMarkerKey is the key of one shard process's marker for generation gen of a stage's record at a step.
func txnMarkerKey(run, stage string, step int64, gen, shard, shards int) string {
	return fmt.Sprintf("%sshard-%04d-of-%04d.json", txnShardDir(run, stage, step, gen), shard, shards)
}

// txnShardDir holds the shard processes' markers of generation gen of a stage's record at a step.
func txnShardDir(run, stage string, step int64, gen int) string {
	return fmt.Sprintf("%s%s/_shards/g%06d/", commitStepPrefix(run, step), stage, gen)
}

// parseRecordKey extracts the step, stage and generation from a key below commitsPrefix(run):
// step=<n>/<stage>/gGGGGGG.json. Shard markers and other names give ok false.
func parseRecordKey(rel string) (step int64, stage string, gen int, ok bool) {
	parts := strings.Split(rel, "/")
	if len(parts) != 3 || !strings.HasPrefix(parts[2], "g") || !strings.HasSuffix(parts[2], ".json") {
		return 0, "", 0, false
	}
	n, ok := parseStepSegment(parts[0])
	if !ok {
		return 0, "", 0, false
	}
	g, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(parts[2], "g"), ".json"))
	if err != nil {
		return 0, "", 0, false
	}
	return n, parts[1], g, true
}

// parseTxnMarkerKey extracts the step, stage and generation of a shard marker key below
// commitsPrefix(run): step=<n>/<stage>/_shards/gGGGGGG/shard-SSSS-of-NNNN.json.
func parseTxnMarkerKey(rel string) (step int64, stage string, gen int, ok bool) {
	parts := strings.Split(rel, "/")
	if len(parts) != 5 || parts[2] != "_shards" {
		return 0, "", 0, false
	}
	n, ok := parseStepSegment(parts[0])
	if !ok {
		return 0, "", 0, false
	}
	g, err := strconv.Atoi(strings.TrimPrefix(parts[3], "g"))
	if err != nil {
		return 0, "", 0, false
	}
	return n, parts[1], g, true
}
