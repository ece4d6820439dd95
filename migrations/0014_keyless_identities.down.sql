ALTER TABLE signature_checks
    DROP COLUMN attestations,
    DROP COLUMN signer_subject,
    DROP COLUMN signer_issuer;
DROP TABLE publisher_identities;
