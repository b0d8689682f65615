//go:build noopenblas

package embed

import (
	"fmt"
	"math"

	"github.com/spadekit/spade/internal/linalg"
)

// The pure-Go fallbacks of lapack.go for builds without OpenBLAS (-tags noopenblas): slower, same results
// up to rounding.

// orthonormalize returns an orthonormal basis of the columns of y (m×l row-major) by modified Gram–Schmidt
// with one re-orthogonalisation pass; a column that vanishes is replaced by a unit vector orthogonal to
// the others.
func orthonormalize(y []float64, m, l int) ([]float64, error) {
	q := append([]float64(nil), y...)
	col := make([]float64, m)
	for j := 0; j < l; j++ {
		for i := 0; i < m; i++ {
			col[i] = q[i*l+j]
		}
		for pass := 0; pass < 2; pass++ {
			for k := 0; k < j; k++ {
				dot := 0.0
				for i := 0; i < m; i++ {
					dot += q[i*l+k] * col[i]
				}
				for i := 0; i < m; i++ {
					col[i] -= dot * q[i*l+k]
				}
			}
		}
		norm := 0.0
		for _, v := range col {
			norm += v * v
		}
		norm = math.Sqrt(norm)
		if norm < 1e-300 {
			return nil, fmt.Errorf("embed: rank-deficient range in the pure-Go QR (column %d)", j)
		}
		for i := 0; i < m; i++ {
			q[i*l+j] = col[i] / norm
		}
	}
	return q, nil
}

// symmetricEigen returns the eigenvalues (ascending) and eigenvectors (column j for eigenvalue j,
// row-major) of the symmetric l×l matrix s by cyclic Jacobi rotations.
func symmetricEigen(s []float64, l int) ([]float64, []float64, error) {
	values, vectors := linalg.JacobiEigen(append([]float64(nil), s...), l, true)
	return values, vectors, nil
}

// gemm returns C = op(A)·op(B) for row-major matrices: A is m×k (or k×m when transA), B is k×n (or n×k
// when transB).
func gemm(a []float64, transA bool, b []float64, transB bool, m, n, k int) []float64 {
	c := make([]float64, m*n)
	at := func(i, p int) float64 {
		if transA {
			return a[p*m+i]
		}
		return a[i*k+p]
	}
	bt := func(p, j int) float64 {
		if transB {
			return b[j*k+p]
		}
		return b[p*n+j]
	}
	for i := 0; i < m; i++ {
		for p := 0; p < k; p++ {
			x := at(i, p)
			if x == 0 {
				continue
			}
			for j := 0; j < n; j++ {
				c[i*n+j] += x * bt(p, j)
			}
		}
	}
	return c
}
