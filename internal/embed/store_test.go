package embed

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/synth"
)

// fakeEmbeddings is an OpenAI-protocol /v1/embeddings server: the vector of a text is (len, 1, #spaces).
func fakeEmbeddings(t *testing.T, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "sbert" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i, text := range req.Input {
			spaces := 0
			for _, c := range text {
				if c == ' ' {
					spaces++
				}
			}
			data = append(data, item{Index: i, Embedding: []float64{float64(len(text)), 1, float64(spaces)}})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestEmbedRunStoresAndReuses: EmbedRun writes one row per env for each embedder, leaves current
// embeddings alone, and keeps the other embedder's rows when it rewrites a partition.
func TestEmbedRunStoresAndReuses(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	o := synth.Small()
	o.Steps = 8
	if err := synth.Write(ctx, lk, "r", o); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	srv := fakeEmbeddings(t, &calls)
	openai := OpenAI{Client: &llm.Embedder{BaseURL: srv.URL + "/v1", Model: "sbert", BatchSize: 5}}
	count := func(embedder string) (rows, envs int) {
		s, err := duck.OpenRuns(ctx, lk, "r")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.DB.QueryRow(`select (select count(*) from embeddings where embedder = $1),
			(select count(*) from envs)`, embedder).Scan(&rows, &envs); err != nil {
			t.Fatal(err)
		}
		return rows, envs
	}
	embedWith := func(e Embedder) RunResult {
		s, err := duck.OpenRuns(ctx, lk, "r")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := EmbedRun(ctx, lk, s.DB, "r", e, false)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := embedWith(openai); !res.Written || res.Envs == 0 {
		t.Fatalf("first openai run: %+v", res)
	}
	if rows, envs := count("openai:sbert"); rows != envs {
		t.Fatalf("openai rows %d, envs %d", rows, envs)
	}
	before := calls.Load()
	if res := embedWith(openai); res.Written || calls.Load() != before {
		t.Errorf("second run re-embedded: %+v, %d more calls", res, calls.Load()-before)
	}
	if res := embedWith(TFIDFLSA{}); !res.Written {
		t.Fatalf("tfidf run: %+v", res)
	}
	rows, envs := count("tfidf_lsa")
	openaiRows, _ := count("openai:sbert")
	if rows != envs || openaiRows != envs {
		t.Errorf("after both: tfidf %d, openai %d rows for %d envs", rows, openaiRows, envs)
	}
}

func TestOpenAIEmbedderErrors(t *testing.T) {
	var calls atomic.Int64
	srv := fakeEmbeddings(t, &calls)
	bad := OpenAI{Client: &llm.Embedder{BaseURL: srv.URL + "/v1", Model: "unknown"}}
	if _, err := bad.Embed(context.Background(), nil, []Document{{ID: "a", Text: "x"}}); err == nil {
		t.Error("a 400 from the server was not an error")
	}
}
