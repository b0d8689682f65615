package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Local is a Store in a local directory. Put writes a temporary file, fsyncs it and renames it into
// place; PutIfAbsent links the temporary file to the key, which fails atomically if the key exists.
type Local struct {
	root string
}

// NewLocal returns a Store rooted at dir, creating it if needed.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("lake: create %s: %w", abs, err)
	}
	return &Local{root: abs}, nil
}

// URI implements Store.
func (l *Local) URI() string { return l.root }

// LocalPath implements LocalPather.
func (l *Local) LocalPath(key string) string { return filepath.Join(l.root, filepath.FromSlash(key)) }

// Get implements Store.
func (l *Local) Get(_ context.Context, key string) (io.ReadCloser, error) {
	f, err := os.Open(l.LocalPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return f, err
}

// writeTemp writes body to a synced temporary file beside key and returns its path.
func (l *Local) writeTemp(key string, body []byte) (string, error) {
	path := l.LocalPath(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(body); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Put implements Store.
func (l *Local) Put(_ context.Context, key string, body []byte) error {
	tmp, err := l.writeTemp(key, body)
	if err != nil {
		return fmt.Errorf("lake: put %s: %w", key, err)
	}
	if err := os.Rename(tmp, l.LocalPath(key)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("lake: put %s: %w", key, err)
	}
	syncDir(filepath.Dir(l.LocalPath(key)))
	return nil
}

// PutIfAbsent implements Store.
func (l *Local) PutIfAbsent(_ context.Context, key string, body []byte) error {
	tmp, err := l.writeTemp(key, body)
	if err != nil {
		return fmt.Errorf("lake: put %s: %w", key, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, l.LocalPath(key)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, key)
		}
		return fmt.Errorf("lake: put %s: %w", key, err)
	}
	syncDir(filepath.Dir(l.LocalPath(key)))
	return nil
}

// List implements Store. Like S3, the prefix is a plain string prefix of keys ("runs/r1" matches
// "runs/r10/run.json"), not a directory. The walk starts at the deepest directory the prefix names and
// skips directories that cannot hold a matching key. Temporary files of writers in progress are not
// listed.
func (l *Local) List(_ context.Context, prefix string) ([]ObjectInfo, error) {
	start := l.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = l.LocalPath(prefix[:i])
	}
	var out []ObjectInfo
	err := filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil // a directory removed under the walk, or a prefix naming a file's "directory"
			}
			return err
		}
		rel, err := filepath.Rel(l.root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".tmp-") || !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		out = append(out, ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lake: list %s: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete implements Store.
func (l *Local) Delete(_ context.Context, key string) error {
	err := os.Remove(l.LocalPath(key))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("lake: delete %s: %w", key, err)
	}
	return nil
}

// Temporaries implements TempLister: the .tmp-* files of puts killed before their rename, below prefix
// (a directory prefix).
func (l *Local) Temporaries(_ context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := filepath.WalkDir(l.LocalPath(strings.TrimSuffix(prefix, "/")), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // renamed or removed under the walk
		}
		rel, err := filepath.Rel(l.root, path)
		if err != nil {
			return err
		}
		out = append(out, ObjectInfo{Key: filepath.ToSlash(rel), Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lake: list temporaries %s: %w", prefix, err)
	}
	return out, nil
}
