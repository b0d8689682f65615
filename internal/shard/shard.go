// Package shard splits a stage's work between independent processes (docs/architecture.md, "Stages"):
// `--shard i --shards n` gives process i the environments whose env_id hashes to i modulo n. Every stage uses
// this one hash, so the rollout, gate and regret shards of a step agree on which process owns an env.
package shard

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Spec is one process's share of a stage: shard Index of Count (Count 0 or 1 means the whole stage).
type Spec struct {
	// Index is this process's shard, 0 .. Count-1.
	Index int
	// Count is the number of shards.
	Count int
}

// All is the unsharded spec: one process owns every env.
var All = Spec{Index: 0, Count: 1}

// New returns the spec for --shard index --shards count, or an error that names the flags.
func New(index, count int) (Spec, error) {
	s := Spec{Index: index, Count: count}
	return s, s.Validate()
}

// Validate reports an out-of-range spec, naming the flags.
func (s Spec) Validate() error {
	if s.Count < 0 {
		return fmt.Errorf("--shards must be >= 1, got %d", s.Count)
	}
	if s.Index < 0 || s.Index >= s.n() {
		return fmt.Errorf("--shard must be in 0..%d for --shards %d, got %d", s.n()-1, s.n(), s.Index)
	}
	return nil
}

func (s Spec) n() int { return max(s.Count, 1) }

// Shards returns the shard count, at least 1.
func (s Spec) Shards() int { return s.n() }

// Sharded reports whether the work is split (more than one shard).
func (s Spec) Sharded() bool { return s.n() > 1 }

// First reports whether this is shard 0, which writes the rows of tables that are not split by env
// (per-skill state, the memory snapshot); the other shards write empty shards of those partitions.
func (s Spec) First() bool { return s.Index == 0 }

// Owns reports whether this shard owns the env: Of(envID, Count) == Index.
func (s Spec) Owns(envID string) bool { return Of(envID, s.n()) == s.Index }

// Of returns the shard of a key among n shards: the first four bytes of the key's SHA-256, read
// big-endian, modulo n (n <= 1 gives 0). The hash is fixed by a standard, so a split recorded in a lake
// means the same on every machine and Go version.
func Of(key string, n int) int {
	if n <= 1 {
		return 0
	}
	sum := sha256.Sum256([]byte(key))
	return int(binary.BigEndian.Uint32(sum[:4]) % uint32(n))
}

// String formats the spec as the flags that select it.
func (s Spec) String() string { return fmt.Sprintf("--shard %d --shards %d", s.Index, s.n()) }
