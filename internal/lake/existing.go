package lake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoLake is returned by OpenExisting for a location that holds no lake: a local directory that does
// not exist, or a directory or S3 prefix with no layout file and nothing under runs/, corpora/ or pools/.
var ErrNoLake = errors.New("lake: no lake")

// OpenExisting opens the lake at uri for a command that only reads it. Unlike Open it creates and writes
// nothing: no directory, no layout file. A location that holds no lake gives ErrNoLake (wrapped, naming
// the location), so a mistyped path is refused rather than becoming an empty lake; a lake written in
// layout 1 gives ErrOldLayout as Open does.
func OpenExisting(ctx context.Context, uri string) (*Lake, error) {
	var store Store
	if strings.HasPrefix(uri, "s3://") {
		s3, err := OpenS3(ctx, uri)
		if err != nil {
			return nil, err
		}
		store = WithRetry(s3, DefaultRetry)
	} else {
		abs, err := filepath.Abs(uri)
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(abs)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s", ErrNoLake, uri)
		}
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%w at %s (it is a file, not a directory)", ErrNoLake, uri)
		}
		store = &Local{root: abs}
	}
	l := New(store, nil)
	if err := l.checkExisting(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// checkExisting is OpenExisting's guard: the layout file, when present, must name this package's layout;
// without one the location must hold a run, a corpus or a pool (a lake whose layout file a read-only
// credential could not write), and none of it in layout 1.
func (l *Lake) checkExisting(ctx context.Context) error {
	if _, err := ReadAll(ctx, l.store, layoutKey); err == nil || !errors.Is(err, ErrNotFound) {
		return l.checkLayout(ctx) // present (checked there) or unreadable (the error said there)
	}
	for _, prefix := range []string{runsPrefix, corporaPrefix, poolsPrefix} {
		objs, err := l.store.List(ctx, prefix)
		if err != nil {
			return err
		}
		if len(objs) > 0 {
			return l.checkNotLayoutOne(ctx)
		}
	}
	return fmt.Errorf("%w at %s", ErrNoLake, l.URI())
}
