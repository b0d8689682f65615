package embed

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// LSAOptions configures the truncated SVD.
type LSAOptions struct {
	// Components is the number of LSA dimensions (default 100, as in the paper's TF-IDF/LSA re-check).
	Components int
	// Oversamples adds random directions to the range finder (default 10, as scikit-learn).
	Oversamples int
	// PowerIterations sharpens the spectrum (default 5, as scikit-learn's TruncatedSVD n_iter).
	PowerIterations int
	// Seed makes the random projection reproducible.
	Seed uint64
}

func (o LSAOptions) withDefaults() LSAOptions {
	if o.Components <= 0 {
		o.Components = 100
	}
	if o.Oversamples <= 0 {
		o.Oversamples = 10
	}
	if o.PowerIterations <= 0 {
		o.PowerIterations = 5
	}
	return o
}

// LSA returns the rank-k latent semantic embedding A·V_k = U_k·Σ_k of the rows of a (documents × terms),
// k = min(Components, rows, cols), computed by the randomized truncated SVD of Halko, Martinsson & Tropp
// (2011) that scikit-learn's TruncatedSVD also uses: Q = orth(A·Ω) for a Gaussian Ω with k + Oversamples
// columns, PowerIterations rounds of subspace iteration Q = orth(A·Aᵀ·Q), then the SVD of the small
// B = QᵀA through the eigen-decomposition of B·Bᵀ = Qᵀ·A·Aᵀ·Q = U_B Σ² U_Bᵀ, so A·V_k ≈ Q·U_B,k·Σ_k.
// Every dense step is on the document side (rows × l), never on the vocabulary side. The result is
// rows×k, row-major.
func LSA(a *Sparse, o LSAOptions) ([]float64, int, error) {
	o = o.withDefaults()
	k := min(o.Components, a.Rows, a.Cols)
	if k == 0 {
		return nil, 0, fmt.Errorf("embed: LSA of a %d×%d matrix", a.Rows, a.Cols)
	}
	l := min(k+o.Oversamples, a.Rows, a.Cols)
	r := rand.New(rand.NewPCG(o.Seed, 0x15a))
	omega := make([]float64, a.Cols*l)
	for i := range omega {
		omega[i] = r.NormFloat64()
	}
	q, err := orthonormalize(a.mulDense(omega, l), a.Rows, l)
	if err != nil {
		return nil, 0, err
	}
	for it := 0; it < o.PowerIterations; it++ {
		// Subspace iteration on A·Aᵀ, orthonormalising on the document side only: the term side has
		// tens of thousands of rows, where a QR per iteration would cost more than everything else.
		if q, err = orthonormalize(a.mulDense(a.mulTransposeDense(q, l), l), a.Rows, l); err != nil {
			return nil, 0, err
		}
	}
	// B·Bᵀ = Qᵀ·A·Aᵀ·Q, formed on the document side (l×rows times rows×l).
	aatq := a.mulDense(a.mulTransposeDense(q, l), l)
	bbt := gemm(q, true, aatq, false, l, l, a.Rows)
	eigenvalues, vectors, err := symmetricEigen(bbt, l)
	if err != nil {
		return nil, 0, err
	}
	// Take the k largest (dsyevd sorts ascending) and scale U_B's columns by σ = sqrt(λ).
	uk := make([]float64, l*k)
	for c := 0; c < k; c++ {
		src := l - 1 - c
		sigma := math.Sqrt(math.Max(eigenvalues[src], 0))
		for i := 0; i < l; i++ {
			uk[i*k+c] = vectors[i*l+src] * sigma
		}
	}
	return gemm(q, false, uk, false, a.Rows, k, l), k, nil
}
