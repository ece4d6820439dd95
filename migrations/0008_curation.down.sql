ALTER TABLE function_versions DROP COLUMN curated_from;
