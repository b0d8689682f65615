-- tfidf: the TF-IDF matrix of a set of documents, as sparse (doc_index, term_index, weight) triplets; the
-- lexical half of the built-in TF-IDF + LSA embedder that SPADE §3.4 uses to re-check its SBERT Vendi
-- result ("a purely lexical embedding gives the same conclusion").
--
-- Reads a view `documents(doc_id, text)` (the embedder creates it over envs: code_sha256, code). Same
-- definitions as scikit-learn's TfidfVectorizer defaults, so the two can be compared: lowercase, tokens
-- are maximal runs of 2+ Unicode letters, digits or underscores (its \b\w\w+\b), tf the raw count,
-- idf = ln((1 + n) / (1 + df)) + 1, each document's row scaled to unit L2 norm. doc_index follows doc_id
-- order, term_index the sorted vocabulary. A document without tokens has no rows.
with

docs as (
    select row_number() over (order by doc_id) - 1 as doc_index, text
    from documents
),

tokens as (
    select doc_index, unnest(regexp_extract_all(lower(text), '[\pL\pN_]{2,}')) as term
    from docs
),

term_counts as (
    select doc_index, term, count(*) as tf
    from tokens
    group by doc_index, term
),

corpus_size as (
    select count(*) as n from docs
),

vocabulary as (
    select term, row_number() over (order by term) - 1 as term_index, count(*) as df
    from term_counts
    group by term
),

weights as (
    select c.doc_index, v.term_index, c.tf * (ln((1 + n.n) / (1 + v.df)) + 1) as weight
    from term_counts c
    join vocabulary v using (term)
    cross join corpus_size n
),

final as (
    select doc_index, term_index, weight / sqrt(sum(weight * weight) over (partition by doc_index)) as weight
    from weights
)

select * from final
order by doc_index, term_index
