//go:build !noopenblas

package linalg

/*
#cgo LDFLAGS: -lopenblas
// Declared here rather than through lapacke.h so the only build dependency is Debian's libopenblas-dev
// (whose libopenblas.so exports the LAPACK symbols).
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
             double *work, const int *lwork, int *iwork, const int *liwork, int *info);
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// SymmetricEigen returns the eigenvalues (ascending) of the symmetric n×n matrix in a (its lower
// triangle column-major, which is its upper triangle row-major; a is destroyed), by LAPACK dsyevd, the
// one binding of it in the module. With wantVectors it also returns the eigenvectors row-major, column j
// for eigenvalue j; otherwise nil. It fails only on invalid arguments or non-convergence.
func SymmetricEigen(a []float64, n int, wantVectors bool) (values, vectors []float64, err error) {
	jobz, uplo := C.char('N'), C.char('L')
	if wantVectors {
		jobz = 'V'
	}
	nn, lda := C.int(n), C.int(n)
	w := make([]float64, n)
	var info C.int
	var workQuery C.double
	var iworkQuery C.int
	lwork, liwork := C.int(-1), C.int(-1)
	C.dsyevd_(&jobz, &uplo, &nn, dptr(a), &lda, dptr(w), &workQuery, &lwork, &iworkQuery, &liwork, &info)
	if info != 0 {
		return nil, nil, fmt.Errorf("linalg: dsyevd workspace query: info %d", info)
	}
	work := make([]float64, max(int(workQuery), 2*n+1))
	iwork := make([]int32, max(int(iworkQuery), 1))
	lwork, liwork = C.int(len(work)), C.int(len(iwork))
	C.dsyevd_(&jobz, &uplo, &nn, dptr(a), &lda, dptr(w), dptr(work), &lwork, (*C.int)(unsafe.Pointer(&iwork[0])), &liwork, &info)
	if info != 0 {
		return nil, nil, fmt.Errorf("linalg: dsyevd: info %d", info)
	}
	if !wantVectors {
		return w, nil, nil
	}
	// a holds the eigenvectors column-major (vector j in a[j*n : (j+1)*n]); return them row-major.
	v := make([]float64, n*n)
	for j := 0; j < n; j++ {
		for i := 0; i < n; i++ {
			v[i*n+j] = a[j*n+i]
		}
	}
	return w, v, nil
}

func dptr(x []float64) *C.double { return (*C.double)(unsafe.Pointer(&x[0])) }
