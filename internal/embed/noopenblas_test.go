package embed

import (
	"os/exec"
	"testing"
)

// TestBuildsWithoutOpenBLAS: the -tags noopenblas build (what `make` picks where libopenblas cannot be
// linked) compiles and vets for every package, and its pure-Go QR, eigensolver and gemm give the LSA the
// exact SVD gives (TestLSAMatchesExactSVD run under the tag).
func TestBuildsWithoutOpenBLAS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the module twice; skipped with -short")
	}
	for _, args := range [][]string{
		{"vet", "-tags", "noopenblas", "github.com/spadekit/spade/..."},
		{"test", "-tags", "noopenblas", "-count=1", "-run", "TestLSAMatchesExactSVD|TestTFIDFLSAEmbedOrderAndDuplicates", "."},
	} {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Errorf("go %v: %v\n%s", args, err, out)
		}
	}
}
