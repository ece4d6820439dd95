-- Where the service pushed each catalog version when it runs with a registry (serve --registry).
ALTER TABLE catalog_versions
    ADD COLUMN oci_reference text,
    ADD COLUMN oci_digest    text;

-- Cosign public keys a publisher registers; a signature by one of them makes an artifact "verified".
CREATE TABLE publisher_keys (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    publisher_id bigint NOT NULL REFERENCES publishers (id),
    fingerprint  text NOT NULL, -- hex SHA-256 of the key's DER encoding
    pem          text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (publisher_id, fingerprint)
);

-- The last signature check of each artifact against its publisher's keys. Registering or removing
-- a key drops the publisher's checks; a check older than a few minutes is made again when read.
CREATE TABLE signature_checks (
    subject         text NOT NULL, -- the artifact, pinned: repository@sha256:...
    publisher_id    bigint NOT NULL REFERENCES publishers (id),
    status          text NOT NULL CHECK (status IN ('verified', 'signed', 'unsigned')),
    key_fingerprint text,
    checked_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subject, publisher_id)
);
