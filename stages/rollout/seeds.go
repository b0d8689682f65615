package rollout

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// EpisodeSeed returns the reset seed of episode `index` of an env's group at a step: 31 bits of
// SHA-256(run seed, step, env id, index, hinted). With paired seeds the hinted flag is left out, so
// episode i with and without the hint start from the same state. 31 bits keep the seed valid for
// random.Random and numpy alike.
func EpisodeSeed(runSeed, step int64, envID string, index int, hinted, paired bool) int64 {
	group := "plain"
	if hinted && !paired {
		group = "hinted"
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%d\x00%s\x00%d\x00%s", runSeed, step, envID, index, group))
	return int64(binary.BigEndian.Uint32(sum[:4]) >> 1)
}

// EpisodeID returns the id of an episode: "ep-" and 16 hex digits of SHA-256(step, env id, hinted,
// index). It does not depend on the run name, so a replayed run has the same ids.
func EpisodeID(step int64, envID string, hinted bool, index int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s\x00%t\x00%d", step, envID, hinted, index))
	return "ep-" + hex.EncodeToString(sum[:8])
}
