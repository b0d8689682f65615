// Package linalg holds the small dense linear algebra the pure-Go routes share (builds with
// -tags noopenblas, and the references tests compare the OpenBLAS routes against).
package linalg

import (
	"math"
	"sort"
)

// JacobiEigen returns the eigenvalues of the symmetric m×m matrix a (row-major; a is overwritten) in
// ascending order, and, when wantVectors is set, the matching eigenvectors (column j for eigenvalue j,
// row-major m×m; nil otherwise). It uses cyclic Jacobi rotations until the off-diagonal mass is below 1e-30
// of the total (at most 100 sweeps): O(m³) per sweep, slow but simple and accurate to a few ulps.
func JacobiEigen(a []float64, m int, wantVectors bool) (values, vectors []float64) {
	var v []float64
	if wantVectors {
		v = make([]float64, m*m)
		for i := 0; i < m; i++ {
			v[i*m+i] = 1
		}
	}
	for sweep := 0; sweep < 100; sweep++ {
		off, total := 0.0, 0.0
		for p := 0; p < m; p++ {
			for q := 0; q < m; q++ {
				sq := a[p*m+q] * a[p*m+q]
				total += sq
				if p != q {
					off += sq
				}
			}
		}
		if off <= 1e-30*total || off == 0 {
			break
		}
		for p := 0; p < m; p++ {
			for q := p + 1; q < m; q++ {
				apq := a[p*m+q]
				if apq == 0 {
					continue
				}
				theta := (a[q*m+q] - a[p*m+p]) / (2 * apq)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				rotate(a, m, p, q, c, s, true)
				rotate(a, m, p, q, c, s, false)
				if v != nil {
					rotate(v, m, p, q, c, s, true)
				}
			}
		}
	}
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return a[order[i]*m+order[i]] < a[order[j]*m+order[j]] })
	values = make([]float64, m)
	if v != nil {
		vectors = make([]float64, m*m)
	}
	for c, src := range order {
		values[c] = a[src*m+src]
		if v != nil {
			for i := 0; i < m; i++ {
				vectors[i*m+c] = v[i*m+src]
			}
		}
	}
	return values, vectors
}

// rotate applies the Givens rotation (c, s) on indices p, q to the columns (columns true) or rows of x.
func rotate(x []float64, m, p, q int, c, s float64, columns bool) {
	for k := 0; k < m; k++ {
		ip, iq := k*m+p, k*m+q
		if !columns {
			ip, iq = p*m+k, q*m+k
		}
		xp, xq := x[ip], x[iq]
		x[ip], x[iq] = c*xp-s*xq, s*xp+c*xq
	}
}
