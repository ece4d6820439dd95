ALTER TABLE function_versions DROP COLUMN derived_size;
