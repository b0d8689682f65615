package linalg

import (
	"math"
	"testing"
)

// TestJacobiEigenKnownMatrix checks a 3×3 symmetric matrix with eigenvalues 1, 2, 4 (by construction
// Q·diag·Qᵀ with a known rotation) and that A·v = λ·v for each returned vector.
func TestJacobiEigenKnownMatrix(t *testing.T) {
	c, s := math.Cos(0.3), math.Sin(0.3)
	q := []float64{c, -s, 0, s, c, 0, 0, 0, 1}
	diag := []float64{4, 1, 2}
	a := make([]float64, 9)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 3; k++ {
				a[i*3+j] += q[i*3+k] * diag[k] * q[j*3+k]
			}
		}
	}
	orig := append([]float64(nil), a...)
	values, vectors := JacobiEigen(a, 3, true)
	for i, want := range []float64{1, 2, 4} {
		if math.Abs(values[i]-want) > 1e-12 {
			t.Fatalf("eigenvalue %d = %v, want %v", i, values[i], want)
		}
		for r := 0; r < 3; r++ {
			av := 0.0
			for k := 0; k < 3; k++ {
				av += orig[r*3+k] * vectors[k*3+i]
			}
			if math.Abs(av-want*vectors[r*3+i]) > 1e-12 {
				t.Fatalf("A·v != λ·v for eigenvalue %v (row %d: %v vs %v)", want, r, av, want*vectors[r*3+i])
			}
		}
	}
	if v, vec := JacobiEigen(append([]float64(nil), orig...), 3, false); vec != nil || math.Abs(v[2]-4) > 1e-12 {
		t.Fatalf("values-only call: %v %v", v, vec)
	}
}
