//go:build noopenblas

package vendi

// Backend names the linear-algebra route of this build.
const Backend = "pure-go"

// symmetricGramEigenvalues returns the eigenvalues of scale·X̂ᵀX̂ (n > d) or scale·X̂X̂ᵀ (n ≤ d) in plain
// Go (cyclic Jacobi): the fallback when OpenBLAS is not available.
func symmetricGramEigenvalues(x []float64, n, d int, scale float64) []float64 {
	g, m := gram(x, n, d, scale, n > d)
	return jacobiEigenvalues(g, m)
}
