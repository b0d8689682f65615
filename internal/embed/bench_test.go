package embed

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/testenv"
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

// sklearnLSA times scikit-learn's TfidfVectorizer + TruncatedSVD(100) in a long-lived process: each "time"
// line on stdin runs it once and answers the seconds.
const sklearnLSA = `
import json, sys, time
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.decomposition import TruncatedSVD
texts = json.load(open(sys.argv[1]))
for line in sys.stdin:
    t0 = time.perf_counter()
    x = TfidfVectorizer().fit_transform(texts)
    TruncatedSVD(n_components=100, random_state=0).fit_transform(x)
    print(json.dumps(time.perf_counter() - t0), flush=True)
`

// BenchmarkTFIDFLSA times the built-in embedder (documents into DuckDB, sql/tfidf.sql, randomized LSA with
// 100 components) on 3,310 documents of ~300 words against scikit-learn's TfidfVectorizer +
// TruncatedSVD(100) on the same texts, interleaved run by run so both see the same load. Metrics:
// median-ms (Go), sklearn-ms (median), ratio = Go median / scikit-learn median.
func BenchmarkTFIDFLSA(b *testing.B) {
	docs := benchDocs(3310, 300)
	db, err := duck.Open()
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
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
	cmd := exec.Command(py, "-c", sklearnLSA, path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	answers := bufio.NewScanner(stdout)
	timeSklearn := func() (float64, error) {
		fmt.Fprintln(stdin, "time")
		if !answers.Scan() {
			return 0, fmt.Errorf("scikit-learn answered nothing (python3-sklearn installed?)")
		}
		var s float64
		return s, json.Unmarshal(answers.Bytes(), &s)
	}
	if _, err := timeSklearn(); err != nil { // warm up, and check scikit-learn works
		testenv.SkipUnlessCI(b, "no scikit-learn reference (python3-sklearn): %v", err)
	}
	var goTimes, skTimes []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		vecs, err := TFIDFLSA{}.Embed(ctx, db, docs)
		if err != nil {
			b.Fatal(err)
		}
		goTimes = append(goTimes, time.Since(start).Seconds())
		if len(vecs) != len(docs) || len(vecs[0]) != 100 {
			b.Fatalf("got %d vectors of %d", len(vecs), len(vecs[0]))
		}
		b.StopTimer()
		sk, err := timeSklearn()
		if err != nil {
			b.Fatal(err)
		}
		skTimes = append(skTimes, sk)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Float64s(goTimes)
	sort.Float64s(skTimes)
	goMedian, skMedian := goTimes[len(goTimes)/2], skTimes[len(skTimes)/2]
	b.ReportMetric(goMedian*1e3, "median-ms")
	b.ReportMetric(skMedian*1e3, "sklearn-ms")
	b.ReportMetric(goMedian/skMedian, "ratio-to-sklearn")
	b.Logf("TF-IDF+LSA(100) on %d docs: Go median %.0f ms, scikit-learn median %.0f ms over %d interleaved runs",
		len(docs), goMedian*1e3, skMedian*1e3, len(goTimes))
}
