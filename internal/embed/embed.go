// Package embed turns environment programs into vectors for the diversity audit (SPADE §3.4, Table 8,
// Figure 7) and stores them in the `embeddings` table, keyed by (code_sha256, embedder).
//
// Two embedders: the built-in TF-IDF + LSA (tokenizing and TF-IDF in DuckDB SQL, sql/tfidf.sql; the
// truncated SVD in Go over OpenBLAS), fitted on the set of programs it is given; and any OpenAI-compatible
// /v1/embeddings endpoint (an SBERT model served by vLLM or TEI) through internal/llm's client.
package embed

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/spadekit/spade/internal/llm"
	sqlfiles "github.com/spadekit/spade/sql"
)

// TFIDFLSAName is the embedder name stored for the built-in TF-IDF + LSA.
const TFIDFLSAName = "tfidf_lsa"

// Document is one text to embed.
type Document struct {
	// ID identifies the text (an env's code_sha256); TF-IDF orders documents by it.
	ID string
	// Text is the program.
	Text string
}

// Embedder maps documents to vectors, one per document and in order.
type Embedder interface {
	// Name is stored in embeddings.embedder.
	Name() string
	// Embed returns one vector per document, in order. Implementations that fit on the set (TF-IDF +
	// LSA) depend on every document given.
	Embed(ctx context.Context, db *sql.DB, docs []Document) ([][]float64, error)
}

// TFIDFLSA is the built-in lexical embedder.
type TFIDFLSA struct {
	// Options configures the LSA (100 components by default).
	Options LSAOptions
}

// Name implements Embedder.
func (TFIDFLSA) Name() string { return TFIDFLSAName }

// Embed implements Embedder: it loads the documents into a temporary DuckDB table `documents`, runs
// sql/tfidf.sql, and reduces the TF-IDF rows with LSA. A document without tokens gets a zero vector (the
// Vendi functions reject it, so such programs surface as an error rather than silently).
func (e TFIDFLSA) Embed(ctx context.Context, db *sql.DB, docs []Document) ([][]float64, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	// Equal IDs are equal programs: embed each once, so tfidf.sql's doc_id order has no ties.
	first := map[string]int{}
	var unique []Document
	for _, d := range docs {
		if _, seen := first[d.ID]; !seen {
			first[d.ID] = len(unique)
			unique = append(unique, d)
		}
	}
	if len(unique) < len(docs) {
		vecs, err := e.Embed(ctx, db, unique)
		if err != nil {
			return nil, err
		}
		out := make([][]float64, len(docs))
		for i, d := range docs {
			out[i] = vecs[first[d.ID]]
		}
		return out, nil
	}
	if err := loadDocuments(ctx, db, docs); err != nil {
		return nil, err
	}
	m, err := TFIDF(ctx, db)
	if err != nil {
		return nil, err
	}
	x, k, err := LSA(m, e.Options)
	if err != nil {
		return nil, err
	}
	// TF-IDF numbers documents in ID order; map back to the caller's order.
	order := sortedOrder(docs)
	out := make([][]float64, len(docs))
	for rank, i := range order {
		out[i] = append([]float64(nil), x[rank*k:(rank+1)*k]...)
	}
	return out, nil
}

// loadDocuments replaces the temporary table `documents(doc_id, text)` with docs, bound as two lists.
func loadDocuments(ctx context.Context, db *sql.DB, docs []Document) error {
	ids := make([]string, len(docs))
	texts := make([]string, len(docs))
	for i, d := range docs {
		ids[i], texts[i] = d.ID, d.Text
	}
	if _, err := db.ExecContext(ctx, "create or replace temp table documents (doc_id varchar, text varchar)"); err != nil {
		return fmt.Errorf("embed: documents: %w", err)
	}
	// Bind in chunks: one statement per chunk keeps the parameter lists moderate.
	for start := 0; start < len(docs); start += 2048 {
		end := min(start+2048, len(docs))
		_, err := db.ExecContext(ctx, "insert into documents select unnest(?::varchar[]), unnest(?::varchar[])",
			ids[start:end], texts[start:end])
		if err != nil {
			return fmt.Errorf("embed: documents: %w", err)
		}
	}
	return nil
}

// TFIDF runs sql/tfidf.sql over the session's `documents` view or table and returns the matrix in CSR
// form (rows in doc_id order).
func TFIDF(ctx context.Context, db *sql.DB) (*Sparse, error) {
	text, err := sqlfiles.Query("tfidf")
	if err != nil {
		return nil, err
	}
	var nDocs int
	if err := db.QueryRowContext(ctx, "select count(*) from documents").Scan(&nDocs); err != nil {
		return nil, fmt.Errorf("embed: documents: %w", err)
	}
	body := strings.TrimRight(strings.TrimSpace(text), ";")
	rows, err := db.QueryContext(ctx, `with tfidf as (`+body+`)
		select doc_index, list(term_index order by term_index), list(weight order by term_index),
			(select max(term_index) + 1 from tfidf) as terms
		from tfidf group by doc_index order by doc_index`)
	if err != nil {
		return nil, fmt.Errorf("embed: tfidf: %w", err)
	}
	defer rows.Close()
	m := &Sparse{Rows: nDocs, Indptr: make([]int32, nDocs+1)}
	next := 0
	for rows.Next() {
		var doc, terms int64
		var indices, weights []any
		if err := rows.Scan(&doc, &indices, &weights, &terms); err != nil {
			return nil, fmt.Errorf("embed: tfidf: %w", err)
		}
		m.Cols = int(terms)
		for ; next <= int(doc); next++ {
			m.Indptr[next] = int32(len(m.Data))
		}
		for j := range indices {
			m.Indices = append(m.Indices, int32(indices[j].(int64)))
			m.Data = append(m.Data, weights[j].(float64))
		}
	}
	for ; next <= nDocs; next++ {
		m.Indptr[next] = int32(len(m.Data))
	}
	return m, rows.Err()
}

// sortedOrder returns the indexes of docs in ID order (ties keep input order), matching tfidf.sql.
func sortedOrder(docs []Document) []int {
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	sortStable(order, func(a, b int) bool { return docs[a].ID < docs[b].ID })
	return order
}

// OpenAI embeds through an OpenAI-compatible /v1/embeddings endpoint.
type OpenAI struct {
	// Client is the configured HTTP client of internal/llm.
	Client *llm.Embedder
}

// Name implements Embedder: "openai:<model>".
func (o OpenAI) Name() string { return "openai:" + o.Client.Model }

// Embed implements Embedder.
func (o OpenAI) Embed(ctx context.Context, _ *sql.DB, docs []Document) ([][]float64, error) {
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	return o.Client.Embed(ctx, texts)
}
