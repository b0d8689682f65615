package laketest

import (
	"os"
	"path/filepath"
	"testing"
)

// CopyDir copies the directory tree src into a new temporary directory of t and returns it (a test that
// damages an input folder, a dataset or a Gym checkout, works on its copy).
func CopyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), body, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
