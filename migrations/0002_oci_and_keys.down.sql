DROP TABLE signature_checks;
DROP TABLE publisher_keys;
ALTER TABLE catalog_versions DROP COLUMN oci_digest, DROP COLUMN oci_reference;
