package analytics

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/spadekit/spade/internal/vendi"
)

// Calibrated is the sample-size-calibrated diversity of one set of embeddings: Vendi/n and the mean
// pairwise cosine distance averaged over Draws random subsets of the same size N (SPADE Table 8's Vendi/n
// is such a per-batch figure, with N = 24 envs: DefaultBatch).
type Calibrated struct {
	// N is the subset size; Total the number of vectors available.
	N, Total int
	// Draws is the number of subsets.
	Draws int
	// VendiPerN and VendiPerNStd are the mean and the standard deviation (n−1 divisor) of Vendi/n over
	// the draws; likewise MeanDistance and MeanDistanceStd for the mean pairwise cosine distance.
	VendiPerN, VendiPerNStd       float64
	MeanDistance, MeanDistanceStd float64
}

// CalibratedVendi draws `draws` subsets of n rows without replacement from x (total×d, row-major) with a
// PCG generator seeded by seed, and returns the mean and spread of Vendi/n and of the mean pairwise cosine
// distance. n ≥ total uses every row once (one draw, zero spread). Equal seeds give equal draws, so runs
// compared with the same n and seed are subsampled alike.
func CalibratedVendi(x []float64, total, d, n, draws int, seed uint64) (Calibrated, error) {
	if total == 0 || d == 0 {
		return Calibrated{}, fmt.Errorf("analytics: calibrated Vendi of an empty set")
	}
	if n <= 0 || n >= total {
		n, draws = total, 1
	}
	draws = max(draws, 1)
	r := rand.New(rand.NewPCG(seed, 0x7ab1e8))
	perm := make([]int, total)
	for i := range perm {
		perm[i] = i
	}
	sub := make([]float64, n*d)
	perN := make([]float64, draws)
	dist := make([]float64, draws)
	for k := 0; k < draws; k++ {
		// Partial Fisher–Yates: the first n entries of perm are a uniform subset.
		for i := 0; i < n && n < total; i++ {
			j := i + r.IntN(total-i)
			perm[i], perm[j] = perm[j], perm[i]
		}
		for i := 0; i < n; i++ {
			copy(sub[i*d:(i+1)*d], x[perm[i]*d:(perm[i]+1)*d])
		}
		var err error
		if perN[k], err = vendi.ScorePerN(sub, n, d); err != nil {
			return Calibrated{}, err
		}
		if dist[k], err = vendi.MeanCosineDistance(sub, n, d); err != nil {
			return Calibrated{}, err
		}
	}
	c := Calibrated{N: n, Total: total, Draws: draws}
	c.VendiPerN, c.VendiPerNStd = meanStd(perN)
	c.MeanDistance, c.MeanDistanceStd = meanStd(dist)
	return c, nil
}

// meanStd returns the mean and the sample standard deviation √(Σ(x−x̄)²/(k−1)) of xs (0 for k < 2).
func meanStd(xs []float64) (float64, float64) {
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}
