//go:build !noopenblas

package vendi

/*
#cgo LDFLAGS: -lopenblas
// Declared here rather than through cblas.h so the only build dependency is Debian's libopenblas-dev;
// dsyevd's one binding is internal/linalg's.
void cblas_dsyrk(int order, int uplo, int trans, int n, int k, double alpha, const double *a, int lda,
                 double beta, double *c, int ldc);
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/spadekit/spade/internal/linalg"
)

// Backend names the linear-algebra route of this build.
const Backend = "openblas"

const (
	cblasRowMajor = 101
	cblasUpper    = 121
	cblasNoTrans  = 111
	cblasTrans    = 112
)

// OpenBLAS threads: one by default, all cores for one large problem at a time. DuckDB calls the vendi UDF
// from several of its threads at once, and OpenBLAS's idle workers spin after each call, starving those
// threads (25 window-sized calls took 0.6–5 s with two OpenBLAS threads, 60 ms with one).
var (
	blasThreads sync.Mutex
	blasProcs   = int(C.openblas_get_num_threads()) // the pool size OpenBLAS chose (OPENBLAS_NUM_THREADS, else the cores)
)

func init() { C.openblas_set_num_threads(1) }

// largeFlops is the size (n·d·min(n, d)) above which a problem gets every core.
const largeFlops = 2e7

// symmetricGramEigenvalues returns the eigenvalues of scale·X̂ᵀX̂ (n > d) or scale·X̂X̂ᵀ (n ≤ d) with
// cblas_dsyrk (upper triangle, row-major) and linalg.SymmetricEigen (eigenvalues only; the row-major
// upper triangle is LAPACK's column-major lower triangle).
func symmetricGramEigenvalues(x []float64, n, d int, scale float64) []float64 {
	if float64(n)*float64(d)*float64(min(n, d)) > largeFlops && blasProcs > 1 {
		blasThreads.Lock()
		C.openblas_set_num_threads(C.int(blasProcs))
		defer func() {
			C.openblas_set_num_threads(1)
			blasThreads.Unlock()
		}()
	}
	m, k, trans := d, n, cblasTrans
	if n <= d {
		m, k, trans = n, d, cblasNoTrans
	}
	g := make([]float64, m*m)
	C.cblas_dsyrk(cblasRowMajor, cblasUpper, C.int(trans), C.int(m), C.int(k), C.double(scale),
		(*C.double)(unsafe.Pointer(&x[0])), C.int(d), 0, (*C.double)(unsafe.Pointer(&g[0])), C.int(m))
	eig, _, err := linalg.SymmetricEigen(g, m, false)
	if err != nil {
		panic(err) // dsyevd fails only on invalid arguments or non-convergence, a bug here
	}
	return eig
}
