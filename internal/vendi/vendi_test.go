package vendi

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spadekit/spade/internal/duck"
)

// referenceScore is the reference formula computed the long way: K_ij = x_i·x_j/(‖x_i‖‖x_j‖) as an n×n
// matrix, its eigenvalues by Jacobi, VS = exp(−Σ λ log λ) over λ of K/n.
func referenceScore(x []float64, n, d int) float64 {
	k := make([]float64, n*n)
	norm := func(i int) float64 {
		s := 0.0
		for c := 0; c < d; c++ {
			s += x[i*d+c] * x[i*d+c]
		}
		return math.Sqrt(s)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			dot := 0.0
			for c := 0; c < d; c++ {
				dot += x[i*d+c] * x[j*d+c]
			}
			k[i*n+j] = dot / (norm(i) * norm(j)) / float64(n)
		}
	}
	entropy := 0.0
	for _, lambda := range jacobiEigenvalues(k, n) {
		if lambda > EigenvalueFloor {
			entropy -= lambda * math.Log(lambda)
		}
	}
	return math.Exp(entropy)
}

func randomMatrix(seed uint64, n, d int) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, n*d)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	return x
}

func relDiff(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(b), 1e-300) }

func TestIdenticalVectorsScoreOne(t *testing.T) {
	n, d := 24, 16
	row := randomMatrix(1, 1, d)
	x := make([]float64, 0, n*d)
	for i := 0; i < n; i++ {
		for _, v := range row {
			x = append(x, v*float64(i+1)) // scaling does not change the cosine
		}
	}
	got, err := Score(x, n, d)
	if err != nil || math.Abs(got-1) > 1e-9 {
		t.Fatalf("Score(24 identical) = %v, %v; want 1", got, err)
	}
	perN, _ := ScorePerN(x, n, d)
	if math.Abs(perN-1.0/24) > 1e-9 {
		t.Errorf("ScorePerN = %v, want 1/24", perN)
	}
	dist, _ := MeanCosineDistance(x, n, d)
	if math.Abs(dist) > 1e-12 {
		t.Errorf("MeanCosineDistance = %v, want 0", dist)
	}
}

func TestOrthonormalVectorsScoreN(t *testing.T) {
	for _, tc := range []struct{ n, d int }{{5, 5}, {5, 12}, {24, 30}} {
		x := make([]float64, tc.n*tc.d)
		for i := 0; i < tc.n; i++ {
			x[i*tc.d+i] = 3 // orthogonal, not unit: Score normalises
		}
		got, err := Score(x, tc.n, tc.d)
		if err != nil || math.Abs(got-float64(tc.n)) > 1e-9*float64(tc.n) {
			t.Errorf("Score(%d orthogonal in R^%d) = %v, %v; want %d", tc.n, tc.d, got, err, tc.n)
		}
		dist, _ := MeanCosineDistance(x, tc.n, tc.d)
		if math.Abs(dist-1) > 1e-12 {
			t.Errorf("MeanCosineDistance(orthogonal) = %v, want 1", dist)
		}
	}
}

// TestTwoVectorsHandComputed: cos = 1/2 gives K/2 = [[1/2, 1/4], [1/4, 1/2]] with eigenvalues 3/4 and 1/4,
// so VS = exp(−(3/4 ln 3/4 + 1/4 ln 1/4)) = 1.7547654...
func TestTwoVectorsHandComputed(t *testing.T) {
	x := []float64{1, 0, 0.5, math.Sqrt(3) / 2}
	want := math.Exp(-(0.75*math.Log(0.75) + 0.25*math.Log(0.25)))
	if math.Abs(want-1.7547654) > 1e-7 {
		t.Fatalf("hand value drifted: %v", want)
	}
	got, err := Score(x, 2, 2)
	if err != nil || relDiff(got, want) > 1e-12 {
		t.Errorf("Score = %v, %v; want %v", got, err, want)
	}
	dist, _ := MeanCosineDistance(x, 2, 2)
	if math.Abs(dist-0.5) > 1e-12 {
		t.Errorf("MeanCosineDistance = %v, want 0.5", dist)
	}
}

// TestMatchesReferenceFormula compares both routes (d×d when n > d, n×n otherwise) with the n×n reference.
func TestMatchesReferenceFormula(t *testing.T) {
	for _, tc := range []struct{ n, d int }{{60, 12}, {40, 40}, {12, 60}, {90, 20}} {
		x := randomMatrix(uint64(tc.n*1000+tc.d), tc.n, tc.d)
		got, err := Score(x, tc.n, tc.d)
		if err != nil {
			t.Fatal(err)
		}
		want := referenceScore(x, tc.n, tc.d)
		if relDiff(got, want) > 1e-9 {
			t.Errorf("n=%d d=%d: Score %.15g, reference %.15g (rel %.2g)", tc.n, tc.d, got, want, relDiff(got, want))
		}
		// The plain-Go Gram route agrees too (the noopenblas build's path).
		g, m := gram(mustNormalize(t, x, tc.n, tc.d), tc.n, tc.d, 1/float64(tc.n), tc.n > tc.d)
		plain := ScoreFromEigenvalues(jacobiEigenvalues(g, m))
		if relDiff(plain, want) > 1e-9 {
			t.Errorf("n=%d d=%d: plain route %.15g, reference %.15g", tc.n, tc.d, plain, want)
		}
	}
}

func mustNormalize(t *testing.T, x []float64, n, d int) []float64 {
	u, err := normalizeRows(x, n, d)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestEdgeCases(t *testing.T) {
	if s, err := Score(nil, 0, 4); s != 0 || err != nil {
		t.Errorf("Score(empty) = %v, %v; want 0", s, err)
	}
	if s, _ := Score([]float64{1, 2}, 1, 2); math.Abs(s-1) > 1e-12 {
		t.Errorf("Score(one row) = %v, want 1", s)
	}
	if _, err := Score([]float64{1, 0, 0, 0}, 2, 2); err == nil {
		t.Error("zero row accepted")
	}
	if _, err := Score([]float64{1, 0, 0}, 2, 2); err == nil {
		t.Error("wrong length accepted")
	}
}

// TestSQLFunctions runs the UDFs in a real DuckDB session, as `spade query` does.
func TestSQLFunctions(t *testing.T) {
	db, err := duck.Open()
	if err == nil {
		err = Register(db)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var vendi, perN, dist float64
	err = db.QueryRow(`select vendi(list(v)), vendi_per_n(list(v)), mean_cosine_distance(list(v)) from (values
		([1.0, 0.0]), ([0.5, sqrt(3) / 2])) t(v)`).Scan(&vendi, &perN, &dist)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Exp(-(0.75*math.Log(0.75) + 0.25*math.Log(0.25)))
	if relDiff(vendi, want) > 1e-12 || relDiff(perN, want/2) > 1e-12 || math.Abs(dist-0.5) > 1e-12 {
		t.Errorf("SQL: vendi %v per_n %v dist %v; want %v %v 0.5", vendi, perN, dist, want, want/2)
	}
	// Grouping works, and FLOAT vectors cast implicitly.
	rows, err := db.Query(`select g, vendi(list(v::float[])) from (values (1, [1.0, 0.0]), (1, [2.0, 0.0]),
		(2, [1.0, 0.0]), (2, [0.0, 1.0])) t(g, v) group by g order by g`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want2 := map[int]float64{1: 1, 2: 2}
	for rows.Next() {
		var g int
		var v float64
		if err := rows.Scan(&g, &v); err != nil {
			t.Fatal(err)
		}
		if math.Abs(v-want2[g]) > 1e-9 {
			t.Errorf("group %d: vendi %v, want %v", g, v, want2[g])
		}
	}
	if _, err := db.Exec(`select vendi([[1.0, 0.0], [1.0]])`); err == nil {
		t.Error("ragged vectors accepted")
	}
}
