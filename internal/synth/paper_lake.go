package synth

import (
	"context"
	"os"

	"github.com/spadekit/spade/internal/lake"
)

// PaperLake writes the paper-size run (Paper(), run "paper") into a new local lake under a fresh
// temporary directory, for the benchmarks that read it. The caller removes the directory (dir) when done;
// on an error nothing is left behind.
func PaperLake(ctx context.Context, prefix string) (lk *lake.Lake, dir string, err error) {
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return nil, "", err
	}
	if lk, err = lake.Open(ctx, dir); err == nil {
		err = Write(ctx, lk, "paper", Paper())
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return lk, dir, nil
}
