package vendi

import "math"

// jacobiEigenvalues returns the eigenvalues of the symmetric m×m matrix a (row-major, overwritten) by the
// cyclic Jacobi method: rotations zero each off-diagonal entry in turn until the off-diagonal mass is
// below 1e-30 of the total (or 100 sweeps). It is slow (O(m³) per sweep) but simple and accurate to a few
// ulps, so it serves as the reference in tests and as the noopenblas fallback.
func jacobiEigenvalues(a []float64, m int) []float64 {
	total := 0.0
	for _, v := range a {
		total += v * v
	}
	for sweep := 0; sweep < 100; sweep++ {
		off := 0.0
		for p := 0; p < m; p++ {
			for q := p + 1; q < m; q++ {
				off += a[p*m+q] * a[p*m+q]
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
				for k := 0; k < m; k++ {
					akp, akq := a[k*m+p], a[k*m+q]
					a[k*m+p] = c*akp - s*akq
					a[k*m+q] = s*akp + c*akq
				}
				for k := 0; k < m; k++ {
					apk, aqk := a[p*m+k], a[q*m+k]
					a[p*m+k] = c*apk - s*aqk
					a[q*m+k] = s*apk + c*aqk
				}
			}
		}
	}
	eig := make([]float64, m)
	for i := range eig {
		eig[i] = a[i*m+i]
	}
	return eig
}
