// Package chromiumtest finds the headless browser that the report's and the viewer's browser tests
// drive: Debian's chromium, or the program SPADE_CHROMIUM names.
package chromiumtest

import (
	"os"
	"os/exec"
	"testing"
)

// Path returns the browser's path. Missing, it fails the test in CI (CI=true), where every real part
// must run, and skips it elsewhere.
func Path(t testing.TB) string {
	t.Helper()
	name := os.Getenv("SPADE_CHROMIUM")
	if name == "" {
		name = "chromium"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI (apt-get install chromium): %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
	return path
}
