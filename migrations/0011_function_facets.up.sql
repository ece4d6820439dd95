-- function_facets holds the current functions as a search's counts read them (store/searchsql.go):
-- the search words, the lower-case kind and the facets' values; about 400 bytes a row for the
-- benchmark's generated functions, against about 1,000 in functions. A broad text search counts
-- by reading rows in storage order until 501 match, a few thousand rows, and the width of the
-- rows read, not the matching, was most of its cost. Counts read only this table, pages read
-- functions. A refresh of functions writes the rows of the functions it refreshed
-- (store.refreshFunctions); a function that is not current has none.
CREATE TABLE function_facets (
    id         bigint PRIMARY KEY REFERENCES functions (id) ON DELETE CASCADE,
    kind_lower text NOT NULL,
    publisher  text NOT NULL,
    tags       text[] NOT NULL,
    runtimes   text[] NOT NULL,
    search     tsvector NOT NULL
);
INSERT INTO function_facets (id, kind_lower, publisher, tags, runtimes, search)
SELECT id, lower(kind), publisher, tags, runtimes, search FROM functions WHERE cardinality(versions) > 0 ORDER BY id;
CREATE INDEX function_facets_search ON function_facets USING gin (search) WITH (fastupdate = off);
CREATE INDEX function_facets_kind_lower ON function_facets (kind_lower text_pattern_ops);
CREATE INDEX function_facets_tags ON function_facets USING gin (tags) WITH (fastupdate = off);
CREATE INDEX function_facets_runtimes ON function_facets USING gin (runtimes) WITH (fastupdate = off);
CREATE INDEX function_facets_publisher ON function_facets (publisher);
-- one function in eight, for the samples of unfiltered text searches (store.DefaultSearchSample;
-- the predicate must stay as it is written here); they move here from functions, which only the
-- counts read them for
CREATE INDEX function_facets_search_sample ON function_facets USING gin (search) WITH (fastupdate = off) WHERE id % 8 = 0;
CREATE INDEX function_facets_kind_lower_sample ON function_facets (kind_lower text_pattern_ops) WHERE id % 8 = 0;
DROP INDEX functions_search_sample;
DROP INDEX functions_kind_lower_sample;
ALTER TABLE function_facets SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_scale_factor = 0.05);
ANALYZE function_facets;
