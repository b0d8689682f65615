//go:build !noopenblas

package embed

/*
#cgo LDFLAGS: -lopenblas
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work, const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau, double *work,
             const int *lwork, int *info);
void cblas_dgemm(int order, int transa, int transb, int m, int n, int k, double alpha, const double *a, int lda,
                 const double *b, int ldb, double beta, double *c, int ldc);
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/spadekit/spade/internal/linalg"
)

func dptr(x []float64) *C.double { return (*C.double)(unsafe.Pointer(&x[0])) }

// orthonormalize returns an m×l row-major matrix whose columns are an orthonormal basis of the column
// space of y (m×l row-major, m ≥ l), by Householder QR (LAPACK dgeqrf + dorgqr). Rank deficiency is fine:
// the extra columns are still orthonormal.
func orthonormalize(y []float64, m, l int) ([]float64, error) {
	// Row-major m×l is column-major l×m; transpose into a column-major m×l buffer for LAPACK.
	a := make([]float64, m*l)
	for i := 0; i < m; i++ {
		for j := 0; j < l; j++ {
			a[j*m+i] = y[i*l+j]
		}
	}
	mm, nn, lda := C.int(m), C.int(l), C.int(m)
	tau := make([]float64, l)
	var info C.int
	var query C.double
	lwork := C.int(-1)
	C.dgeqrf_(&mm, &nn, dptr(a), &lda, dptr(tau), &query, &lwork, &info)
	work := make([]float64, max(int(query), l))
	lwork = C.int(len(work))
	C.dgeqrf_(&mm, &nn, dptr(a), &lda, dptr(tau), dptr(work), &lwork, &info)
	if info != 0 {
		return nil, fmt.Errorf("embed: dgeqrf: info %d", info)
	}
	lwork = -1
	C.dorgqr_(&mm, &nn, &nn, dptr(a), &lda, dptr(tau), &query, &lwork, &info)
	if int(query) > len(work) {
		work = make([]float64, int(query))
	}
	lwork = C.int(len(work))
	C.dorgqr_(&mm, &nn, &nn, dptr(a), &lda, dptr(tau), dptr(work), &lwork, &info)
	if info != 0 {
		return nil, fmt.Errorf("embed: dorgqr: info %d", info)
	}
	q := make([]float64, m*l)
	for i := 0; i < m; i++ {
		for j := 0; j < l; j++ {
			q[i*l+j] = a[j*m+i]
		}
	}
	return q, nil
}

// symmetricEigen returns the eigenvalues (ascending) and eigenvectors (column j of the row-major l×l
// result belongs to eigenvalue j) of the symmetric l×l matrix s (destroyed): linalg.SymmetricEigen.
func symmetricEigen(s []float64, l int) ([]float64, []float64, error) {
	return linalg.SymmetricEigen(s, l, true)
}

// gemm returns C = op(A)·op(B) for row-major matrices: A is m×k (or k×m when transA), B is k×n (or n×k
// when transB).
func gemm(a []float64, transA bool, b []float64, transB bool, m, n, k int) []float64 {
	c := make([]float64, m*n)
	if m == 0 || n == 0 || k == 0 {
		return c
	}
	ta, tb, lda, ldb := 111, 111, k, n
	if transA {
		ta, lda = 112, m
	}
	if transB {
		tb, ldb = 112, k
	}
	C.cblas_dgemm(101, C.int(ta), C.int(tb), C.int(m), C.int(n), C.int(k), 1, dptr(a), C.int(lda), dptr(b), C.int(ldb), 0,
		dptr(c), C.int(n))
	return c
}
