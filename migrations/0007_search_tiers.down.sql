DROP INDEX functions_kind_lower;
ALTER TABLE functions DROP COLUMN text_search, DROP COLUMN name_search;
