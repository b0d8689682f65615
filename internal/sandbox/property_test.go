package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestInnocentTranscriptAfterAnyHostile is the property: an innocent env's transcripts (its
// observations and rewards, episodes one after another and concurrent) are the same whether it
// runs alone or right after any program of testdata/hostile in the same one-worker pool, on
// every layer. Each hostile program is loaded, reset and stepped a few times; what fails is
// ignored (the point is what it leaves behind).
func TestInnocentTranscriptAfterAnyHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("every hostile program on every layer; skipped with -short")
	}
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "hostile", "*.py"))
	if err != nil || len(paths) < 20 {
		t.Fatalf("hostile programs: %v, %v", paths, err)
	}
	sort.Strings(paths)
	outside := t.TempDir()
	planted := filepath.Join(t.TempDir(), "planted.txt")
	if err := os.WriteFile(planted, []byte("planted"), 0o644); err != nil {
		t.Fatal(err)
	}
	render := strings.NewReplacer("@PLANTED_FILE@", planted, "@OUTSIDE_DIR@", outside, "@PORT@", "9", "@SECRET_NAME@", "SPADE_TEST_NO_SUCH_SECRET")
	short := func(o *Options) {
		o.Workers = 1
		o.LoadTimeout, o.ResetTimeout, o.StepTimeout = 2*time.Second, time.Second, 500*time.Millisecond
		o.AddressSpace = 512 << 20
	}
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			innocent := newInnocent(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			aloneSeq, aloneConc, err := transcripts(ctx, newTestPool(t, iso, short), innocent)
			if err != nil {
				t.Fatalf("innocent alone: %v", err)
			}
			p := newTestPool(t, iso, short)
			for _, path := range paths {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				name := strings.TrimSuffix(filepath.Base(path), ".py")
				if prog, err := p.Load(ctx, render.Replace(string(data))); err == nil {
					if env, err := prog.NewEnv(ctx); err == nil {
						if _, err := env.Reset(ctx, 0); err == nil || errors.Is(err, ErrEnv) {
							for i := 0; i < 3; i++ {
								if _, err := env.Step(ctx, "7"); err != nil && !errors.Is(err, ErrEnv) {
									break
								}
							}
						}
						env.Close()
					}
					prog.Close()
				}
				seq, conc, err := transcripts(ctx, p, innocent)
				if err != nil {
					t.Fatalf("innocent after %s: %v", name, err)
				}
				if !reflect.DeepEqual(seq, aloneSeq) || !reflect.DeepEqual(conc, aloneConc) {
					t.Fatalf("innocent after %s: %v and %v, alone %v", name, seq, conc, aloneSeq)
				}
			}
			if entries, _ := os.ReadDir(outside); len(entries) > 0 {
				t.Errorf("a hostile program wrote outside: %v", entries)
			}
		})
	}
}
