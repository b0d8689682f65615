package corpus

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/spadekit/spade/schemas"
)

// DrawWithReplacement returns the document of one Designer attempt under sample.doc_draw replacement:
// every (step, slot, attempt) draws uniformly from the whole corpus, independently of every other draw,
// so a document may come up again in the same step or in any later one (the authors draw one document
// per attempt this way). The index is the first 8 bytes of SHA-256(seed, step, slot, attempt), little
// endian, modulo the corpus size, over the documents sorted by doc_id, so the draw depends on neither the
// corpus's stored order nor on scheduling. docs must not be empty; it is not modified.
func DrawWithReplacement(docs []schemas.CorpusRow, seed, step int64, slot, attempt int32) schemas.CorpusRow {
	ids := make([]int, len(docs))
	for i := range ids {
		ids[i] = i
	}
	sort.Slice(ids, func(a, b int) bool { return docs[ids[a]].DocID < docs[ids[b]].DocID })
	sum := sha256.Sum256(fmt.Appendf(nil, "draw\x00%d\x00%d\x00%d\x00%d", seed, step, slot, attempt))
	k := binary.LittleEndian.Uint64(sum[:8]) % uint64(len(docs))
	return docs[ids[k]]
}
