CREATE INDEX functions_search_sample ON functions USING gin (search) WITH (fastupdate = off) WHERE id % 8 = 0;
CREATE INDEX functions_kind_lower_sample ON functions (lower(kind) text_pattern_ops) WHERE id % 8 = 0;
DROP TABLE function_facets;
