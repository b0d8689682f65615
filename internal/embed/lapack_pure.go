//go:build noopenblas

package embed

import (
	"fmt"
	"math"
	"sort"
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
	a := append([]float64(nil), s...)
	v := make([]float64, l*l)
	for i := 0; i < l; i++ {
		v[i*l+i] = 1
	}
	for sweep := 0; sweep < 100; sweep++ {
		off, total := 0.0, 0.0
		for p := 0; p < l; p++ {
			for q := 0; q < l; q++ {
				total += a[p*l+q] * a[p*l+q]
				if p != q {
					off += a[p*l+q] * a[p*l+q]
				}
			}
		}
		if off <= 1e-30*total {
			break
		}
		for p := 0; p < l; p++ {
			for q := p + 1; q < l; q++ {
				apq := a[p*l+q]
				if apq == 0 {
					continue
				}
				theta := (a[q*l+q] - a[p*l+p]) / (2 * apq)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				sn := t * c
				for k := 0; k < l; k++ {
					akp, akq := a[k*l+p], a[k*l+q]
					a[k*l+p], a[k*l+q] = c*akp-sn*akq, sn*akp+c*akq
				}
				for k := 0; k < l; k++ {
					apk, aqk := a[p*l+k], a[q*l+k]
					a[p*l+k], a[q*l+k] = c*apk-sn*aqk, sn*apk+c*aqk
				}
				for k := 0; k < l; k++ {
					vkp, vkq := v[k*l+p], v[k*l+q]
					v[k*l+p], v[k*l+q] = c*vkp-sn*vkq, sn*vkp+c*vkq
				}
			}
		}
	}
	order := make([]int, l)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return a[order[i]*l+order[i]] < a[order[j]*l+order[j]] })
	w := make([]float64, l)
	vs := make([]float64, l*l)
	for c, src := range order {
		w[c] = a[src*l+src]
		for i := 0; i < l; i++ {
			vs[i*l+c] = v[i*l+src]
		}
	}
	return w, vs, nil
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
