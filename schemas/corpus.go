package schemas

// CorpusRow is one document of an imported corpus (table `corpus`, not per run).
type CorpusRow struct {
	// DocID is the document's id, unique within the corpus.
	DocID string `parquet:"doc_id"`
	// Text is the document body, UTF-8, non-empty.
	Text string `parquet:"text"`
	// Source names where the document came from (a dataset name or URL); may be empty.
	Source string `parquet:"source"`
	// Domain is a coarse topic such as "math", "science" or "code"; may be empty.
	Domain string `parquet:"domain"`
}

// CorpusSpec describes the corpus table.
var CorpusSpec = register("corpus", 1, false, CorpusRow{})

// Validate implements Row.
func (r CorpusRow) Validate() error {
	c := checks{table: "corpus"}
	c.required("doc_id", r.DocID)
	c.required("text", r.Text)
	c.utf8("doc_id", r.DocID)
	c.utf8("text", r.Text)
	c.utf8("source", r.Source)
	c.utf8("domain", r.Domain)
	return c.err
}
