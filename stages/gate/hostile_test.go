package gate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/sandbox"
)

// target is what the hostile programs attack: a planted file, an outside directory, a
// listening port and a secret in the environment. Each is checked after every program.
type target struct {
	planted, plantedContent, outside, secretName, secretValue string
	port                                                      int
	connections                                               atomic.Int64
}

func newTarget(t *testing.T) *target {
	t.Helper()
	tg := &target{outside: t.TempDir()}
	tg.planted = filepath.Join(t.TempDir(), "planted.txt")
	tg.plantedContent = "planted-" + randomHex(t)
	if err := os.WriteFile(tg.planted, []byte(tg.plantedContent), 0o644); err != nil {
		t.Fatal(err)
	}
	tg.secretName = "SPADE_TEST_SECRET_" + strings.ToUpper(randomHex(t)[:8])
	tg.secretValue = "secret-" + randomHex(t)
	t.Setenv(tg.secretName, tg.secretValue)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	tg.port = ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tg.connections.Add(1)
			c.Close()
		}
	}()
	return tg
}

func randomHex(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// render substitutes the placeholders of a hostile program.
func (tg *target) render(code string) string {
	return strings.NewReplacer("@PLANTED_FILE@", tg.planted, "@OUTSIDE_DIR@", tg.outside,
		"@PORT@", strconv.Itoa(tg.port), "@SECRET_NAME@", tg.secretName).Replace(code)
}

// assertUntouched proves the attack did not reach its targets.
func (tg *target) assertUntouched(t *testing.T, texts ...string) {
	t.Helper()
	if data, err := os.ReadFile(tg.planted); err != nil || string(data) != tg.plantedContent {
		t.Errorf("planted file changed: %q, %v", data, err)
	}
	if entries, err := os.ReadDir(tg.outside); err != nil || len(entries) > 0 {
		t.Errorf("outside directory changed: %v, %v", entries, err)
	}
	if n := tg.connections.Load(); n > 0 {
		t.Errorf("the test's port saw %d connections", n)
	}
	for _, text := range texts {
		if strings.Contains(text, tg.secretValue) {
			t.Errorf("the secret leaked into %q", clip(text))
		}
		if strings.Contains(text, tg.plantedContent) {
			t.Errorf("the planted file's content leaked into %q", clip(text))
		}
	}
}

// TestHostileContained runs every hostile program through the gate with the static check on
// and off, under each isolation layer, and proves containment after each one; the same pool
// must then still accept a sample env.
func TestHostileContained(t *testing.T) {
	if testing.Short() {
		t.Skip("every hostile program through the gate on every layer; skipped with -short")
	}
	hostile := readSamples(t, repoPath("testdata", "hostile"))
	if len(hostile) < 20 {
		t.Fatalf("%d hostile programs, want >= 20", len(hostile))
	}
	good := readSamples(t, repoPath("testdata", "envs"))[0]
	modes := []struct {
		name     string
		iso      sandbox.Isolation
		noStatic bool
	}{
		{"bwrap/static_on", sandbox.IsolationBwrap, false},
		{"bwrap/static_off", sandbox.IsolationBwrap, true},
		{"namespaces/static_off", sandbox.IsolationNamespaces, true},
		{"landlock/static_off", sandbox.IsolationLandlock, true},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			tg := newTarget(t)
			// A program that runs into a deadline on purpose (its expected verdict names a timeout)
			// gets the short deadlines; every other one gets deadlines that load does not reach, so
			// that a loaded machine cannot turn its verdict (a memory error, say) into a timeout.
			short, roomy := newPoolWith(t, mode.iso, shortDeadlines), newPool(t, mode.iso)
			for _, h := range hostile {
				t.Run(h.Name, func(t *testing.T) {
					pool := roomy
					if slices.Contains(h.Expect, "timeout") {
						pool = short
					}
					code := tg.render(h.Code)
					v := Check(context.Background(), pool, code, CheckOptions{Setting: h.Setting, Hint: h.Hint, NoStatic: mode.noStatic})
					f := v.Failure()
					if v.Accepted || f == nil {
						t.Fatalf("hostile program accepted (attack: %s)", h.Attack)
					}
					if f.Error == "" {
						t.Fatalf("check %s failed without saying why", f.Check)
					}
					matched := !mode.noStatic && f.Check == CheckStatic
					for _, want := range h.Expect {
						matched = matched || strings.Contains(f.Error, want)
					}
					if !matched {
						t.Errorf("check %s failed with %q; want one of %q", f.Check, clip(f.Error), h.Expect)
					}
					if mode.noStatic && f.Check == CheckStatic {
						t.Errorf("static check ran although switched off")
					}
					var texts []string
					for _, r := range v.Results {
						texts = append(texts, r.Error)
					}
					tg.assertUntouched(t, texts...)
					// the same pool goes on serving the sample envs correctly
					if ok := Check(context.Background(), pool, good.Code, CheckOptions{Setting: good.Setting, Hint: good.Hint}); !ok.Accepted {
						t.Fatalf("after %s the pool rejects a sample env: %s", h.Name, ok.FailureText())
					}
				})
			}
			// daemons get time to try again; the targets must stay untouched
			time.Sleep(300 * time.Millisecond)
			tg.assertUntouched(t)
		})
	}
}
