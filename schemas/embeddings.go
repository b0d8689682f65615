package schemas

// EmbeddingRow is one environment program embedded by one embedder (table `embeddings`, partitioned by the
// env's pool step). The key is (code_sha256, embedder): an environment generated twice with the same code
// is embedded once per pool it appears in, with the same vector.
type EmbeddingRow struct {
	// Step is the pool step of the env (equal to envs.pool_step), so `embeddings` joins `envs` by step.
	Step int64 `parquet:"step"`
	// EnvID is the embedded env (envs.env_id).
	EnvID string `parquet:"env_id"`
	// CodeSHA256 is the lowercase hex sha256 of the embedded program (envs.code_sha256).
	CodeSHA256 string `parquet:"code_sha256"`
	// Embedder names the embedder: "tfidf_lsa" (the built-in TF-IDF + LSA, fitted on the run's envs) or
	// "openai:<model>" for an OpenAI-compatible /v1/embeddings endpoint.
	Embedder string `parquet:"embedder"`
	// Dim is len(Vector).
	Dim int32 `parquet:"dim"`
	// Vector is the embedding, not necessarily unit length (Vendi normalises rows itself).
	Vector []float64 `parquet:"vector,list"`
}

// EmbeddingsSpec describes the embeddings table.
var EmbeddingsSpec = register("embeddings", 1, true, EmbeddingRow{})

// Validate implements Row.
func (r EmbeddingRow) Validate() error {
	c := checks{table: "embeddings"}
	c.nonNegative("step", r.Step)
	c.required("env_id", r.EnvID)
	c.required("embedder", r.Embedder)
	if len(r.CodeSHA256) != 64 {
		c.fail("code_sha256", "must be 64 hex characters, got %d", len(r.CodeSHA256))
	}
	if int(r.Dim) != len(r.Vector) || r.Dim < 1 {
		c.fail("dim", "must equal len(vector) >= 1, got dim %d for %d values", r.Dim, len(r.Vector))
	}
	for _, x := range r.Vector {
		c.finite("vector", x)
	}
	return c.err
}
