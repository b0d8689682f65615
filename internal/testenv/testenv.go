// Package testenv decides what a test does when a real part it needs (a program, a Python module, root,
// an architecture) is missing: it skips on a developer's machine and fails under CI, where every real
// part is installed and a skip would hide a test that never ran.
//
// Tests skipped for -short call t.Skip themselves: a -short skip is a choice of the caller, not a
// missing part, and never fails under CI.
package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// CI reports whether the tests run under continuous integration: the environment variable CI is set to
// anything but "", "0" or "false" (any case), the reading of CI providers that set CI=true or CI=1.
func CI() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("CI"))) {
	case "", "0", "false":
		return false
	}
	return true
}

// SkipUnlessCI stops the test because a part it needs is missing: under CI (see CI) it fails the test
// with t.Fatalf, elsewhere it skips it with t.Skipf. The message should name the missing part and how to
// install it. It does not return.
func SkipUnlessCI(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("required under CI: "+format, args...)
	}
	t.Skipf(format, args...)
}

// Require returns when ok is true; otherwise it stops the test as SkipUnlessCI does, with the message
// why (formatted with args).
func Require(t testing.TB, ok bool, why string, args ...any) {
	t.Helper()
	if !ok {
		SkipUnlessCI(t, "%s", fmt.Sprintf(why, args...))
	}
}
