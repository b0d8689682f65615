package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/testenv"
)

// python returns Debian's interpreter (numpy, scikit-learn from apt), failing in CI when it is missing.
func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("SPADE_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if err := exec.Command(py, "-c", "import numpy, sklearn").Run(); err != nil {
		testenv.SkipUnlessCI(t, "%s lacks numpy/scikit-learn (apt-get install python3-sklearn): %v", py, err)
	}
	return py
}

// testDocs returns n reproducible documents over a small vocabulary with topics.
func testDocs(n, words int, seed uint64) []Document {
	r := rand.New(rand.NewPCG(seed, 3))
	docs := make([]Document, n)
	for i := range docs {
		topic := r.IntN(8)
		var b strings.Builder
		for w := 0; w < words; w++ {
			if r.Float64() < 0.5 {
				fmt.Fprintf(&b, "t%dw%d ", topic, r.IntN(20))
			} else {
				fmt.Fprintf(&b, "common%d ", r.IntN(40))
			}
		}
		docs[i] = Document{ID: fmt.Sprintf("doc%04d", i), Text: b.String()}
	}
	return docs
}

func runPython(t *testing.T, py, script string, input any) []byte {
	t.Helper()
	raw, _ := json.Marshal(input)
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(raw))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return out
}

// TestTFIDFMatchesScikitLearn compares sql/tfidf.sql with TfidfVectorizer's defaults on the same texts.
func TestTFIDFMatchesScikitLearn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts scikit-learn for the reference; skipped with -short")
	}
	py := python(t)
	docs := testDocs(40, 60, 1)
	docs[3].Text = "Über-Class with_underscore x 12 ab AB ab" // case folding, 1-char tokens dropped, digits kept
	db, err := duck.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := loadDocuments(context.Background(), db, docs); err != nil {
		t.Fatal(err)
	}
	m, err := TFIDF(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text // IDs are already in sorted order
	}
	out := runPython(t, py, `
import json, sys
from sklearn.feature_extraction.text import TfidfVectorizer
texts = json.load(sys.stdin)
v = TfidfVectorizer()
x = v.fit_transform(texts).toarray()
print(json.dumps({"vocab": len(v.vocabulary_), "x": x.tolist()}))`, texts)
	var ref struct {
		Vocab int         `json:"vocab"`
		X     [][]float64 `json:"x"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	if m.Cols != ref.Vocab {
		t.Fatalf("vocabulary: %d terms, scikit-learn %d", m.Cols, ref.Vocab)
	}
	for i := 0; i < m.Rows; i++ {
		dense := make([]float64, m.Cols)
		for p := m.Indptr[i]; p < m.Indptr[i+1]; p++ {
			dense[m.Indices[p]] = m.Data[p]
		}
		for j := range dense {
			if math.Abs(dense[j]-ref.X[i][j]) > 1e-12 {
				t.Fatalf("doc %d term %d: %v, scikit-learn %v", i, j, dense[j], ref.X[i][j])
			}
		}
	}
}

// TestLSAMatchesExactSVD: with enough power iterations the randomized SVD recovers the leading singular
// triplets, so the embedding's column norms are the top singular values and the Gram matrix of the
// embedding equals that of U_k·Σ_k from an exact SVD (sign-free comparison).
func TestLSAMatchesExactSVD(t *testing.T) {
	py := python(t)
	docs := testDocs(60, 80, 2)
	db, err := duck.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := loadDocuments(context.Background(), db, docs); err != nil {
		t.Fatal(err)
	}
	m, err := TFIDF(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	const k = 6
	x, got, err := LSA(m, LSAOptions{Components: k, Oversamples: 20, PowerIterations: 8, Seed: 1})
	if err != nil || got != k {
		t.Fatalf("LSA: k=%d err=%v", got, err)
	}
	dense := make([][]float64, m.Rows)
	for i := range dense {
		dense[i] = make([]float64, m.Cols)
		for p := m.Indptr[i]; p < m.Indptr[i+1]; p++ {
			dense[i][m.Indices[p]] = m.Data[p]
		}
	}
	out := runPython(t, py, `
import json, sys
import numpy as np
a = np.array(json.load(sys.stdin))
u, s, vt = np.linalg.svd(a, full_matrices=False)
e = u[:, :6] * s[:6]
print(json.dumps({"s": s[:6].tolist(), "gram": (e @ e.T).tolist()}))`, dense)
	var ref struct {
		S    []float64   `json:"s"`
		Gram [][]float64 `json:"gram"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	for c := 0; c < k; c++ {
		norm := 0.0
		for i := 0; i < m.Rows; i++ {
			norm += x[i*k+c] * x[i*k+c]
		}
		if math.Abs(math.Sqrt(norm)-ref.S[c]) > 1e-6*ref.S[0] {
			t.Errorf("component %d: σ %v, exact %v", c, math.Sqrt(norm), ref.S[c])
		}
	}
	for i := 0; i < m.Rows; i++ {
		for j := 0; j < m.Rows; j++ {
			dot := 0.0
			for c := 0; c < k; c++ {
				dot += x[i*k+c] * x[j*k+c]
			}
			if math.Abs(dot-ref.Gram[i][j]) > 1e-6 {
				t.Fatalf("gram[%d][%d] = %v, exact %v", i, j, dot, ref.Gram[i][j])
			}
		}
	}
}

// TestTFIDFLSAEmbedOrderAndDuplicates: vectors come back in the caller's order, equal IDs share a vector,
// and k is capped by the number of documents.
func TestTFIDFLSAEmbedOrderAndDuplicates(t *testing.T) {
	docs := testDocs(12, 30, 3)
	docs = append(docs, docs[4]) // the same program twice
	docs[0], docs[7] = docs[7], docs[0]
	db, err := duck.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vecs, err := TFIDFLSA{}.Embed(context.Background(), db, docs)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(docs) || len(vecs[0]) != 12 {
		t.Fatalf("got %d vectors of %d dims, want %d of 12", len(vecs), len(vecs[0]), len(docs))
	}
	for c := range vecs[4] {
		if vecs[4][c] != vecs[len(docs)-1][c] {
			t.Fatal("equal programs got different vectors")
		}
	}
	// Order: embedding the permuted set gives, per ID, the same vector as the sorted set up to sign.
	sorted := append([]Document(nil), docs[:12]...)
	sorted[0], sorted[7] = sorted[7], sorted[0]
	again, err := TFIDFLSA{}.Embed(context.Background(), db, sorted)
	if err != nil {
		t.Fatal(err)
	}
	dot := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	// Compare Gram entries (sign-free): doc 7 of the first call is doc 0 of the second.
	if math.Abs(dot(vecs[7], vecs[3])-dot(again[0], again[3])) > 1e-9 {
		t.Error("vectors are not returned in the caller's order")
	}
}
