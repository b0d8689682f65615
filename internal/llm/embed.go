package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Embedder calls an OpenAI-compatible POST /embeddings (vLLM with an embedding model, or any server of
// that protocol), used by the analytics to embed environments for the Vendi score.
type Embedder struct {
	// BaseURL is the /v1 root of the server.
	BaseURL string
	// Model is the embedding model name.
	Model string
	// APIKeyEnv names the environment variable holding the API key; empty sends none.
	APIKeyEnv string
	// BatchSize bounds the inputs per request (default 64).
	BatchSize int
	// Timeout bounds one request (default 2 minutes).
	Timeout time.Duration
	// HTTPClient is used when set; otherwise http.DefaultClient.
	HTTPClient *http.Client
}

// embeddingRequest is the body of POST /embeddings.
type embeddingRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

// embeddingResponse is the part of the /embeddings answer read here.
type embeddingResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one vector per text, in order. Texts are sent in batches of BatchSize; any HTTP or
// decoding failure is an error naming the batch.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	batch := e.BatchSize
	if batch <= 0 {
		batch = 64
	}
	out := make([][]float64, 0, len(texts))
	for start := 0; start < len(texts); start += batch {
		end := min(start+batch, len(texts))
		vecs, err := e.embedBatch(ctx, texts[start:end])
		if err != nil {
			return nil, fmt.Errorf("llm: embed texts %d..%d with %s: %w", start, end-1, e.Model, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float64, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	client := e.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	raw, err := json.Marshal(embeddingRequest{Model: e.Model, Input: texts})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, strings.TrimRight(e.BaseURL, "/")+"/embeddings", bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKeyEnv != "" {
		if key := os.Getenv(e.APIKeyEnv); key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, prefix(string(body), 300))
	}
	var parsed embeddingResponse
	if err := json.Unmarshal(body, &parsed); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	if len(parsed.Data) != len(texts) {
		return nil, fmt.Errorf("got %d embeddings for %d inputs", len(parsed.Data), len(texts))
	}
	vecs := make([][]float64, len(texts))
	for _, d := range parsed.Data {
		if d.Index < 0 || d.Index >= len(texts) || vecs[d.Index] != nil {
			return nil, fmt.Errorf("bad or repeated embedding index %d", d.Index)
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}
