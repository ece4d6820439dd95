-- A catalog may list a function of another publisher when the entry runs exactly what that
-- publisher published (curation by reference). curated_from is that publisher on the rows of such
-- entries; NULL on the rows a function's own publisher published.
ALTER TABLE function_versions ADD COLUMN curated_from bigint REFERENCES publishers (id);
