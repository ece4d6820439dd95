DROP TABLE audit_log;
DROP TABLE function_versions;
DROP TABLE definition_revisions;
DROP TABLE functions;
ALTER TABLE catalogs DROP CONSTRAINT catalogs_latest_version_id_fkey;
DROP TABLE catalog_versions;
DROP TABLE catalogs;
DROP TABLE api_tokens;
DROP TABLE publishers;
