package embed

/*
#cgo CFLAGS: -O3
// csr_times_dense computes out (rows×k, row-major) = A·B for A in CSR form (rows × cols) and B (cols×k,
// row-major); the inner loop is a contiguous axpy the C compiler vectorises.
static void csr_times_dense(int rows, const int *indptr, const int *indices, const double *data,
                            const double *b, int k, double *out) {
    for (int i = 0; i < rows; i++) {
        double *o = out + (long)i * k;
        for (int c = 0; c < k; c++) o[c] = 0;
        for (int p = indptr[i]; p < indptr[i + 1]; p++) {
            const double w = data[p];
            const double *src = b + (long)indices[p] * k;
            for (int c = 0; c < k; c++) o[c] += w * src[c];
        }
    }
}
// csr_transpose_times_dense computes out (cols×k) = Aᵀ·B for A in CSR form and B (rows×k, row-major).
static void csr_transpose_times_dense(int rows, int cols, const int *indptr, const int *indices,
                                      const double *data, const double *b, int k, double *out) {
    for (long j = 0; j < (long)cols * k; j++) out[j] = 0;
    for (int i = 0; i < rows; i++) {
        const double *src = b + (long)i * k;
        for (int p = indptr[i]; p < indptr[i + 1]; p++) {
            const double w = data[p];
            double *o = out + (long)indices[p] * k;
            for (int c = 0; c < k; c++) o[c] += w * src[c];
        }
    }
}
*/
import "C"

import "unsafe"

// Sparse is a row-major sparse matrix in CSR form (rows documents × cols terms).
type Sparse struct {
	// Rows and Cols are the matrix's shape.
	Rows, Cols int
	// Indptr has Rows+1 entries: row i's entries are Indices/Data[Indptr[i]:Indptr[i+1]].
	Indptr []int32
	// Indices are column indices, ascending within a row.
	Indices []int32
	// Data are the values.
	Data []float64
}

// mulDense returns A·B, B cols×k row-major, as a rows×k row-major matrix.
func (a *Sparse) mulDense(b []float64, k int) []float64 {
	out := make([]float64, a.Rows*k)
	if a.Rows == 0 || len(a.Data) == 0 {
		return out
	}
	C.csr_times_dense(C.int(a.Rows), (*C.int)(unsafe.Pointer(&a.Indptr[0])), (*C.int)(unsafe.Pointer(&a.Indices[0])),
		(*C.double)(unsafe.Pointer(&a.Data[0])), (*C.double)(unsafe.Pointer(&b[0])), C.int(k), (*C.double)(unsafe.Pointer(&out[0])))
	return out
}

// mulTransposeDense returns Aᵀ·B, B rows×k row-major, as a cols×k row-major matrix.
func (a *Sparse) mulTransposeDense(b []float64, k int) []float64 {
	out := make([]float64, a.Cols*k)
	if a.Rows == 0 || len(a.Data) == 0 {
		return out
	}
	C.csr_transpose_times_dense(C.int(a.Rows), C.int(a.Cols), (*C.int)(unsafe.Pointer(&a.Indptr[0])),
		(*C.int)(unsafe.Pointer(&a.Indices[0])), (*C.double)(unsafe.Pointer(&a.Data[0])), (*C.double)(unsafe.Pointer(&b[0])),
		C.int(k), (*C.double)(unsafe.Pointer(&out[0])))
	return out
}
