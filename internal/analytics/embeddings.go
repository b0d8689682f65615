package analytics

import (
	"context"
	"fmt"
	"time"

	"github.com/spadekit/spade/internal/embed"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
)

// EmbedderSpec says which embedder to use: "tfidf_lsa" (built in), or "openai" with BaseURL and Model.
type EmbedderSpec struct {
	// Kind is tfidf_lsa or openai.
	Kind string
	// BaseURL is the /v1 root of the embeddings server (openai only).
	BaseURL string
	// Model is the embedding model (openai only).
	Model string
	// APIKeyEnv names the variable holding the API key (openai only; empty sends none).
	APIKeyEnv string
}

// Embedder builds the embedder the spec names; an unknown kind or a missing URL/model is an error
// fit for the user.
func (s EmbedderSpec) Embedder() (embed.Embedder, error) {
	switch s.Kind {
	case "", embed.TFIDFLSAName:
		return embed.TFIDFLSA{}, nil
	case "openai":
		if s.BaseURL == "" || s.Model == "" {
			return nil, fmt.Errorf("the openai embedder needs --embed-url and --embed-model")
		}
		return embed.OpenAI{Client: &llm.Embedder{BaseURL: s.BaseURL, Model: s.Model, APIKeyEnv: s.APIKeyEnv,
			Timeout: 5 * time.Minute}}, nil
	}
	return nil, fmt.Errorf("unknown embedder %q (tfidf_lsa or openai)", s.Kind)
}

// EnsureEmbeddings makes the run's embeddings of the given embedder current (embed.EmbedRun) and returns
// the embedder's stored name.
func EnsureEmbeddings(ctx context.Context, lk *lake.Lake, run string, spec EmbedderSpec) (string, error) {
	e, err := spec.Embedder()
	if err != nil {
		return "", err
	}
	s, err := OpenRuns(ctx, lk, run)
	if err != nil {
		return "", err
	}
	defer s.Close()
	if _, err := embed.EmbedRun(ctx, lk, s.DB, run, e, false); err != nil {
		return "", err
	}
	return e.Name(), nil
}

// OpenEmbedded opens a session over one run (OpenCached) whose diversity models read the spec's embedder, first making
// that embedder's embeddings current when ensure is set. The freshness check runs in the session itself,
// so the common case (embeddings already stored) opens DuckDB once.
func OpenEmbedded(ctx context.Context, lk *lake.Lake, run string, spec EmbedderSpec, ensure bool) (*Session, error) {
	e, err := spec.Embedder()
	if err != nil {
		return nil, err
	}
	s, err := OpenCached(ctx, lk, run, e.Name())
	if err != nil || !ensure {
		return s, err
	}
	res, err := embed.EmbedRun(ctx, lk, s.DB, run, e, false)
	if err != nil {
		s.Close()
		return nil, err
	}
	if !res.Written {
		return s, nil
	}
	s.Close() // the embeddings view was bound to the files before the write
	return OpenCached(ctx, lk, run, e.Name())
}
