package lake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake/s3test"
)

// TestOpenExisting: a location without a lake (missing, empty, holding other files, a file) is ErrNoLake
// and is left as it was; a lake Open made, and one holding a run but no layout file, open and are not
// written to.
func TestOpenExisting(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	t.Setenv("SPADE_CACHE", t.TempDir())
	missing, empty, other, file := filepath.Join(root, "missing"), filepath.Join(root, "empty"), filepath.Join(root, "other"), filepath.Join(root, "file")
	for _, d := range []string{empty, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(other, "notes.txt"), file} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, uri := range []string{missing, empty, other, file} {
		if _, err := OpenExisting(ctx, uri); !errors.Is(err, ErrNoLake) {
			t.Errorf("OpenExisting(%s) = %v, want ErrNoLake", filepath.Base(uri), err)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("OpenExisting created the missing directory")
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("OpenExisting wrote into the empty directory: %v", entries)
	}

	made := filepath.Join(root, "made")
	lk, err := Open(ctx, made)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenExisting(ctx, made); err != nil {
		t.Errorf("OpenExisting of a lake Open made: %v", err)
	}
	// A lake with a run but no layout file (a read-only credential could not write it): opened as it is.
	if err := lk.CreateRun(ctx, "r", config.Default()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(made, layoutKey)); err != nil {
		t.Fatal(err)
	}
	got, err := OpenExisting(ctx, made)
	if err != nil {
		t.Fatalf("OpenExisting of a lake without its layout file: %v", err)
	}
	if runs, err := got.Runs(ctx); err != nil || len(runs) != 1 {
		t.Errorf("Runs = %v, %v", runs, err)
	}
	if _, err := os.Stat(filepath.Join(made, layoutKey)); err == nil {
		t.Error("OpenExisting wrote the layout file")
	}
}

// TestOpenExistingS3: an S3 prefix holding nothing is ErrNoLake and is left empty; once a lake is made
// there it opens.
func TestOpenExistingS3(t *testing.T) {
	ctx := context.Background()
	t.Setenv("SPADE_CACHE", t.TempDir())
	_, bucket := s3test.Start(t)
	uri := "s3://" + bucket + "/typo"
	if _, err := OpenExisting(ctx, uri); !errors.Is(err, ErrNoLake) {
		t.Fatalf("OpenExisting(%s) = %v, want ErrNoLake", uri, err)
	}
	s3, err := OpenS3(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	if objs, err := s3.List(ctx, ""); err != nil || len(objs) != 0 {
		t.Fatalf("OpenExisting wrote %v (%v)", objs, err)
	}
	if _, err := Open(ctx, uri); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenExisting(ctx, uri); err != nil {
		t.Errorf("OpenExisting of a lake Open made on S3: %v", err)
	}
}
