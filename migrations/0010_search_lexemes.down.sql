DROP INDEX functions_kind_lower_sample;
DROP INDEX functions_search_sample;
DROP TABLE search_lexemes;
