package bench

import (
	"crypto/sha256"
	"encoding/binary"
)

// hashString returns the first 64 bits of SHA-256(s).
func hashString(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}
