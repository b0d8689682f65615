package vendi

import "github.com/spadekit/spade/internal/linalg"

// jacobiEigenvalues returns the eigenvalues (ascending) of the symmetric m×m matrix a (row-major,
// overwritten) by cyclic Jacobi rotations: the reference in tests and the noopenblas fallback.
func jacobiEigenvalues(a []float64, m int) []float64 {
	values, _ := linalg.JacobiEigen(a, m, false)
	return values
}
