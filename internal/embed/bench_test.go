package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spade-rl/spade/internal/duck"
)

// benchDocs returns n program-like documents of about `words` tokens: Python keywords, 400 topics of 24
// words each (one topic per document), and a long tail of identifiers.
func benchDocs(n, words int) []Document {
	r := rand.New(rand.NewPCG(7, 7))
	keywords := strings.Fields("def class self return if else for in range while import state reward done info observation action step reset seed")
	docs := make([]Document, n)
	for i := range docs {
		topic := r.IntN(400)
		var b strings.Builder
		for w := 0; w < words; w++ {
			switch x := r.Float64(); {
			case x < 0.45:
				fmt.Fprintf(&b, "topic%d_word%d ", topic, r.IntN(24))
			case x < 0.55:
				fmt.Fprintf(&b, "ident%d ", r.IntN(20000))
			default:
				b.WriteString(keywords[r.IntN(len(keywords))] + " ")
			}
		}
		docs[i] = Document{ID: fmt.Sprintf("%06d", i), Text: b.String()}
	}
	return docs
}

const sklearnLSA = `
import json, sys, time
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.decomposition import TruncatedSVD
texts = json.load(open(sys.argv[1]))
times = []
for _ in range(3):
    t0 = time.perf_counter()
    x = TfidfVectorizer().fit_transform(texts)
    TruncatedSVD(n_components=100, random_state=0).fit_transform(x)
    times.append(time.perf_counter() - t0)
print(json.dumps({"median_s": sorted(times)[1], "min_s": min(times)}))
`

// BenchmarkTFIDFLSA times the built-in embedder (documents into DuckDB, sql/tfidf.sql, randomized LSA with
// 100 components) on 3,310 documents of ~300 words, and scikit-learn's TfidfVectorizer + TruncatedSVD(100)
// on the same texts in the same run. Metrics: sklearn-ms (median of 3), ratio = Go / scikit-learn.
func BenchmarkTFIDFLSA(b *testing.B) {
	docs := benchDocs(3310, 300)
	db, err := duck.Open()
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		vecs, err := TFIDFLSA{}.Embed(ctx, db, docs)
		if err != nil {
			b.Fatal(err)
		}
		if len(vecs) != len(docs) || len(vecs[0]) != 100 {
			b.Fatalf("got %d vectors of %d", len(vecs), len(vecs[0]))
		}
	}
	b.StopTimer()
	perOp := b.Elapsed().Seconds() / float64(b.N)
	py := os.Getenv("SPADE_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	raw, _ := json.Marshal(texts)
	path := filepath.Join(b.TempDir(), "docs.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command(py, "-c", sklearnLSA, path).Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatalf("scikit-learn reference (python3-sklearn): %v", err)
		}
		b.Logf("no scikit-learn reference: %v", err)
		return
	}
	var ref struct {
		MedianS float64 `json:"median_s"`
		MinS    float64 `json:"min_s"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ref.MedianS*1e3, "sklearn-ms")
	b.ReportMetric(perOp/ref.MedianS, "ratio-to-sklearn")
	b.Logf("TF-IDF+LSA(100) on %d docs: Go %.0f ms/op, scikit-learn median %.0f ms (min %.0f)", len(docs), perOp*1e3,
		ref.MedianS*1e3, ref.MinS*1e3)
}
