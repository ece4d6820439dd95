DROP TABLE key_challenges;
-- The old schema has no key history: removed keys go.
DELETE FROM publisher_keys WHERE removed_at IS NOT NULL;
DROP INDEX publisher_keys_active;
ALTER TABLE publisher_keys ADD CONSTRAINT publisher_keys_publisher_id_fingerprint_key UNIQUE (publisher_id, fingerprint);
ALTER TABLE publisher_keys DROP COLUMN proven_at, DROP COLUMN removed_at, DROP COLUMN removed_reason;
DROP TABLE group_conflicts;
DROP TABLE group_grants;
