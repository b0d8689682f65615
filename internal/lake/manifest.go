package lake

import (
	"encoding/json"
	"fmt"
)

// FileEntry describes one committed part file.
type FileEntry struct {
	// Name is the file's name within the partition directory.
	Name string `json:"name"`
	// Rows is the number of rows in the file.
	Rows int64 `json:"rows"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// SHA256 is the lowercase hex sha256 of the file's content.
	SHA256 string `json:"sha256"`
}

// Manifest is the content of a partition's _manifest.json: the one record that makes a partition exist.
type Manifest struct {
	// Table, Run (or Corpus) and Step name the partition.
	Table  string `json:"table"`
	Run    string `json:"run,omitempty"`
	Corpus string `json:"corpus,omitempty"`
	Step   int64  `json:"step"`
	// SchemaVersion is the table's schemas.Spec version the rows were written with.
	SchemaVersion int `json:"schema_version"`
	// Generation counts forced rewrites: 0 for the first commit, +1 for each --force.
	Generation int `json:"generation"`
	// Shards is how many shard writers contributed files.
	Shards int `json:"shards"`
	// Files lists every part file, sorted by name; Rows and Bytes are their totals.
	Files []FileEntry `json:"files"`
	Rows  int64       `json:"rows"`
	Bytes int64       `json:"bytes"`
	// Writer identifies the committing process (writer id, host, pid), for messages.
	Writer string `json:"writer"`
	// CommittedAt is the commit time, RFC 3339 UTC.
	CommittedAt string `json:"committed_at"`
}

// shardMarker is what one shard writer records once its parts are uploaded.
type shardMarker struct {
	Shard  int         `json:"shard"`
	Shards int         `json:"shards"`
	Writer string      `json:"writer"`
	Files  []FileEntry `json:"files"`
}

func decodeManifest(key string, body []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("lake: corrupt manifest %s: %v", key, err)
	}
	return &m, nil
}
