-- Two cheaper ways for a text search to read the GIN index (store/search.go, store/searchsql.go).
--
-- search_lexemes holds every word (lexeme) of the search columns, so that a search can turn a word
-- it matches as a prefix into the words of the index that begin with it: GIN reads a prefix by
-- collecting every posting of every word it covers into a bitmap, and two common prefixes cost
-- 30-40 ms at a million functions where the same words, matched exactly, cost 8-16 ms. Words are
-- added as functions are refreshed and never removed: a word no function has any longer only
-- widens a query by a term that matches nothing. "C" collation: byte order, for the prefix range.
CREATE TABLE search_lexemes (lexeme text COLLATE "C" PRIMARY KEY);
INSERT INTO search_lexemes SELECT DISTINCT unnest(tsvector_to_array(search)) FROM functions ON CONFLICT DO NOTHING;

-- The same indexes over one function in eight: an unfiltered text search reads its count's sample
-- there first (store.DefaultSearchSample; the predicate must stay as it is written here).
CREATE INDEX functions_search_sample ON functions USING gin (search) WITH (fastupdate = off) WHERE id % 8 = 0;
CREATE INDEX functions_kind_lower_sample ON functions (lower(kind) text_pattern_ops) WHERE id % 8 = 0;
