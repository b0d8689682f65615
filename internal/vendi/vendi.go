// Package vendi computes the Vendi score of a set of embeddings (Friedman & Dieng 2023; SPADE §3.4 and
// Table 8): the exponential of the Shannon entropy of the eigenvalues of K/n, K the cosine-similarity
// matrix of the n rows. It is "the effective number of distinct items": n identical rows give 1, n
// orthonormal rows give n.
//
// The eigenvalues are computed through the smaller of the two Gram matrices. With X̂ the row-normalised
// n×d matrix, K/n = X̂X̂ᵀ/n and X̂ᵀX̂/n share their non-zero eigenvalues, so when n > d the d×d matrix
// X̂ᵀX̂/n (a symmetric rank-k update, dsyrk) is decomposed instead of the n×n one. The default build does
// both steps with OpenBLAS through cgo (cblas_dsyrk, LAPACK dsyevd, eigenvalues only); the build tag
// noopenblas selects a pure-Go path (cyclic Jacobi), slower but dependency-free.
package vendi

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// EigenvalueFloor is the threshold below which eigenvalues of K/n are dropped before the entropy: they are
// zero up to rounding (the matrix is positive semi-definite and has rank ≤ min(n, d)), and rounding can make
// them slightly negative, where λ log λ is undefined. Dropping them changes the entropy by at most
// |1e-12 · log 1e-12| ≈ 3e-11 per eigenvalue.
const EigenvalueFloor = 1e-12

// ErrZeroVector is returned when a row has zero norm: its cosine similarity to anything is undefined.
var ErrZeroVector = errors.New("vendi: a vector has zero norm (cosine similarity undefined)")

// ScoreFromEigenvalues returns VS = exp(−Σ_i λ_i log λ_i) over the eigenvalues λ of K/n, skipping
// λ ≤ EigenvalueFloor. The λ of K/n sum to 1 (trace K = n for unit rows); they are not renormalised here.
// An empty list gives exp(0) = 1.
func ScoreFromEigenvalues(eigenvalues []float64) float64 {
	entropy := 0.0
	for _, lambda := range eigenvalues {
		if lambda > EigenvalueFloor {
			entropy -= lambda * math.Log(lambda)
		}
	}
	return math.Exp(entropy)
}

// Score returns the Vendi score VS(K) = exp(−Σ λ_i log λ_i), λ the eigenvalues of K/n, K_ij = cos(x_i, x_j),
// for the n rows of x (row-major, n×d). n = 0 gives 0 (no items); n = 1 gives 1. Rows need not be unit
// length; a zero row is ErrZeroVector.
func Score(x []float64, n, d int) (float64, error) {
	if n == 0 {
		return 0, nil
	}
	eigenvalues, err := Eigenvalues(x, n, d)
	if err != nil {
		return 0, err
	}
	return ScoreFromEigenvalues(eigenvalues), nil
}

// ScorePerN returns VS/n, the Vendi score divided by the number of items, in (0, 1]: 1/n for identical
// rows, 1 for orthogonal ones (SPADE Table 8 reports it: 0.68 full, 0.04 without corpus). n = 0 gives 0.
func ScorePerN(x []float64, n, d int) (float64, error) {
	if n == 0 {
		return 0, nil
	}
	score, err := Score(x, n, d)
	return score / float64(n), err
}

// MeanCosineDistance returns the mean over unordered pairs i < j of 1 − cos(x_i, x_j), computed in O(n·d)
// as 1 − (‖Σ_i x̂_i‖² − n) / (n(n−1)) with x̂ the unit rows. Fewer than two rows give 0.
func MeanCosineDistance(x []float64, n, d int) (float64, error) {
	if n < 2 {
		return 0, nil
	}
	unit, err := normalizeRows(x, n, d)
	if err != nil {
		return 0, err
	}
	sum := make([]float64, d)
	for i := 0; i < n; i++ {
		row := unit[i*d : (i+1)*d]
		for j, v := range row {
			sum[j] += v
		}
	}
	sq := 0.0
	for _, v := range sum {
		sq += v * v
	}
	meanSimilarity := (sq - float64(n)) / float64(n*(n-1))
	return 1 - meanSimilarity, nil
}

// Eigenvalues returns the eigenvalues of K/n (K the cosine-similarity matrix of the n×d rows of x), through
// the d×d matrix X̂ᵀX̂/n when n > d and the n×n matrix X̂X̂ᵀ/n otherwise; the list has min(n, d) entries
// (the other eigenvalues are zero).
func Eigenvalues(x []float64, n, d int) ([]float64, error) {
	if len(x) != n*d {
		return nil, fmt.Errorf("vendi: %d values for %d×%d", len(x), n, d)
	}
	buf := getScratch(n * d)
	defer scratch.Put(buf)
	if err := normalizeInto(*buf, x, n, d); err != nil {
		return nil, err
	}
	return symmetricGramEigenvalues(*buf, n, d, 1/float64(n)), nil
}

// normalizeRows returns a copy of x with every row scaled to unit Euclidean norm.
func normalizeRows(x []float64, n, d int) ([]float64, error) {
	unit := make([]float64, n*d)
	if err := normalizeInto(unit, x, n, d); err != nil {
		return nil, err
	}
	return unit, nil
}

// normalizeInto writes x with every row scaled to unit norm into unit (len n*d): one pass for the norm,
// one multiply by its reciprocal. Large inputs are split between GOMAXPROCS goroutines.
func normalizeInto(unit, x []float64, n, d int) error {
	workers := runtime.GOMAXPROCS(0)
	if n*d < 1<<18 || workers < 2 {
		return normalizeRange(unit, x, 0, n, d)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			errs[w] = normalizeRange(unit, x, lo, hi, d)
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// normalizeRange normalises rows lo..hi-1.
func normalizeRange(unit, x []float64, lo, hi, d int) error {
	for i := lo; i < hi; i++ {
		row := x[i*d : (i+1)*d : (i+1)*d]
		sum := 0.0
		for _, v := range row {
			sum += v * v
		}
		norm := math.Sqrt(sum)
		if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
			return fmt.Errorf("%w: row %d", ErrZeroVector, i)
		}
		inv := 1 / norm
		out := unit[i*d : (i+1)*d : (i+1)*d]
		for j, v := range row {
			out[j] = v * inv
		}
	}
	return nil
}

// scratch recycles the n×d normalised copies between calls (a UDF evaluates many groups in a row).
var scratch sync.Pool

func getScratch(size int) *[]float64 {
	if p, ok := scratch.Get().(*[]float64); ok && cap(*p) >= size {
		*p = (*p)[:size]
		return p
	}
	buf := make([]float64, size)
	return &buf
}

// gram returns scale·X Xᵀ (n×n, when transpose is false) or scale·XᵀX (d×d), dense and symmetric; the
// plain Go reference for the BLAS route.
func gram(x []float64, n, d int, scale float64, transpose bool) ([]float64, int) {
	if !transpose {
		g := make([]float64, n*n)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				s := 0.0
				for k := 0; k < d; k++ {
					s += x[i*d+k] * x[j*d+k]
				}
				g[i*n+j], g[j*n+i] = s*scale, s*scale
			}
		}
		return g, n
	}
	g := make([]float64, d*d)
	for i := 0; i < n; i++ {
		row := x[i*d : (i+1)*d]
		for a := 0; a < d; a++ {
			va := row[a] * scale
			if va == 0 {
				continue
			}
			out := g[a*d : (a+1)*d]
			for b := a; b < d; b++ {
				out[b] += va * row[b]
			}
		}
	}
	for a := 0; a < d; a++ {
		for b := a + 1; b < d; b++ {
			g[b*d+a] = g[a*d+b]
		}
	}
	return g, d
}
