// Package chromiumtest finds the headless browser that the report's and the viewer's browser tests
// drive: Debian's chromium, or the program SPADE_CHROMIUM names.
package chromiumtest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/spadekit/spade/internal/testenv"
)

// Path returns the browser's path. Missing, it fails the test under CI (testenv.CI), where every real part
// must run, and skips it elsewhere.
func Path(t testing.TB) string {
	t.Helper()
	name := os.Getenv("SPADE_CHROMIUM")
	if name == "" {
		name = "chromium"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		testenv.SkipUnlessCI(t, "%s not installed (apt-get install chromium): %v", name, err)
	}
	return path
}
