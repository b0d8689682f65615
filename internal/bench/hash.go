package bench

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// hashString returns the first 64 bits of SHA-256(s).
func hashString(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}

// EnvPoolSeed returns the reset seed of sample `sample` of an env_pool item: 31 bits of SHA-256(run seed,
// bench, item id, sample). It does not depend on the step, so every evaluation of a run plays the same
// starting states; 31 bits keep it valid for random.Random and numpy alike.
func EnvPoolSeed(runSeed int64, bench, itemID string, sample int) int64 {
	return int64(hashString(fmt.Sprintf("env_pool\x00%d\x00%s\x00%s\x00%d", runSeed, bench, itemID, sample)) >> 33)
}
