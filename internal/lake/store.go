package lake

import (
	"bytes"
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned by Store.Get and Store.Stat for a missing key.
var ErrNotFound = errors.New("lake: not found")

// ErrExists is returned by Store.PutIfAbsent when the key already exists.
var ErrExists = errors.New("lake: already exists")

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	// Key is the object's path relative to the store's root, with forward slashes.
	Key string
	// Size is the object's length in bytes.
	Size int64
	// ModTime is when the object was last written (zero when the store does not say).
	ModTime time.Time
}

// TempLister is implemented by stores whose writers leave temporary files behind when killed mid-put
// (the local store's .tmp-* files), so verify and vacuum can find them.
type TempLister interface {
	// Temporaries lists the temporary files below prefix.
	Temporaries(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// Store is the storage a lake lives on: a flat key space of immutable-by-convention objects.
// Implementations must make Put and PutIfAbsent atomic: a reader sees the whole old object, the whole new
// one, or (for a new key) nothing.
type Store interface {
	// Get opens the object at key; ErrNotFound when missing.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Put writes the whole object at key, replacing any existing one atomically.
	Put(ctx context.Context, key string, body []byte) error
	// PutIfAbsent writes the object only if key does not exist; ErrExists otherwise. Of any number of
	// concurrent callers on one key, exactly one succeeds.
	PutIfAbsent(ctx context.Context, key string, body []byte) error
	// List returns every object whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Delete removes the object at key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// URI returns the store's location as the user wrote it (a directory or s3://bucket/prefix).
	URI() string
}

// LocalPather is implemented by stores whose objects are plain local files DuckDB can read in place.
type LocalPather interface {
	// LocalPath returns the local file path of key.
	LocalPath(key string) string
}

// ReadAll reads a whole object.
func ReadAll(ctx context.Context, s Store, key string) ([]byte, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
