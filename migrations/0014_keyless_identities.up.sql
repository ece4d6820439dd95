-- Keyless identities a publisher registers beside its keys: an OIDC issuer and a certificate
-- subject pattern (`*` for any run of characters), proven by a sigstore bundle over a challenge.
-- A signature whose Fulcio certificate an active identity matches makes an artifact "verified".
-- A removed identity stays, as history.
CREATE TABLE publisher_identities (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    publisher_id   bigint NOT NULL REFERENCES publishers (id),
    issuer         text NOT NULL,
    subject        text NOT NULL,
    -- the certificate identity that answered the challenge
    proven_issuer  text NOT NULL,
    proven_subject text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    proven_at      timestamptz NOT NULL DEFAULT now(),
    removed_at     timestamptz,
    removed_reason text
);
CREATE UNIQUE INDEX publisher_identities_active ON publisher_identities (publisher_id, issuer, subject) WHERE removed_at IS NULL;

-- Who made the signature that verified (a key's fingerprint is key_fingerprint; a certificate's
-- identity these), and what else the registry holds for the artifact: an SLSA provenance
-- attestation signed by the publisher, and SBOMs.
ALTER TABLE signature_checks
    ADD COLUMN signer_issuer  text,
    ADD COLUMN signer_subject text,
    ADD COLUMN attestations   jsonb;
