package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
)

// Cache is a content-addressed local copy of remote part files, keyed by the sha256 in their manifest.
// A file is only ever placed in the cache after its checksum has been verified, so a cached path is
// always correct for its key.
type Cache struct {
	dir        string
	downloaded atomic.Int64
	mismatches atomic.Int64
}

// NewCache returns a cache rooted at dir.
func NewCache(dir string) *Cache { return &Cache{dir: dir} }

// Dir returns the cache's root directory.
func (c *Cache) Dir() string { return c.dir }

// BytesDownloaded returns how many bytes this cache has fetched from stores since it was created.
func (c *Cache) BytesDownloaded() int64 { return c.downloaded.Load() }

// Mismatches returns how many downloads failed their sha256 check (and were fetched again) since the
// cache was created.
func (c *Cache) Mismatches() int64 { return c.mismatches.Load() }

// Fetch returns the local path of a remote file, downloading and verifying it on a miss. A download whose
// checksum does not match is fetched again, up to three tries in all, before failing; transient store
// errors are the job of the Retry wrapper around the store.
func (c *Cache) Fetch(ctx context.Context, store Store, key string, f FileEntry) (string, error) {
	path := filepath.Join(c.dir, filepath.FromSlash(cachePath(f.SHA256)))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		body, err := ReadAll(ctx, store, key)
		if err != nil {
			return "", err
		}
		c.downloaded.Add(int64(len(body)))
		if lastErr = verify(key, body, f); lastErr != nil {
			c.mismatches.Add(1)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("lake: cache: %w", err)
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
		if err != nil {
			return "", fmt.Errorf("lake: cache: %w", err)
		}
		_, werr := tmp.Write(body)
		cerr := tmp.Close()
		if werr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("lake: cache: write %s: %v", path, errors.Join(werr, cerr))
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("lake: cache: %w", err)
		}
		return path, nil
	}
	return "", lastErr
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
