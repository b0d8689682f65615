package stage

import "github.com/spadekit/spade/internal/lake"

// Command writes the spade command line that runs words against run of lk, as a message suggests it: it
// names the lake and the run, so it works as written from any directory and without SPADE_LAKE or
// SPADE_RUN ("spade --lake /data/lake --run r1 gate --step 0").
func Command(lk *lake.Lake, run string, words ...string) string {
	return lk.Command(append([]string{"--run", run}, words...)...)
}
