// Package gobuild builds the spade binary from inside tests with the build tags the test binary itself
// was built with, so a test run under `make test` (which adds -tags noopenblas where OpenBLAS cannot be
// linked) never starts a `go build` that fails to link.
package gobuild

import (
	"fmt"
	"os/exec"
	"strings"
)

// SpadePackage is the import path of the command-line program.
const SpadePackage = "github.com/spadekit/spade/cmd/spade"

// Tags returns the build tags this binary was compiled with that change how spade builds
// (noopenblas is the one there is), in the form `go build -tags` takes; "" when there are none.
func Tags() string {
	return strings.Join(tags, ",")
}

// Args returns the arguments of `go build` for pkg into out, with Tags().
func Args(pkg, out string) []string {
	args := []string{"build"}
	if t := Tags(); t != "" {
		args = append(args, "-tags", t)
	}
	return append(args, "-o", out, pkg)
}

// Build runs `go build` for pkg into out with Tags() and returns an error that carries the
// compiler's output.
func Build(pkg, out string) error {
	args := Args(pkg, out)
	if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}
