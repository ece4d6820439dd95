-- An entry a function's publisher proposes for a catalog someone else publishes. The catalog's
-- publisher approves it, which publishes a new version of the catalog with the entry, or rejects
-- it with a reason. An approved proposal counts as its proposer's publication of the entry's
-- runtimes for that catalog, so that later versions of the catalog may carry them on.
CREATE TABLE catalog_proposals (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    catalog_id      bigint NOT NULL REFERENCES catalogs (id),
    proposer_id     bigint NOT NULL REFERENCES publishers (id),
    fn_group        text NOT NULL,
    kind            text NOT NULL,
    content         bytea NOT NULL, -- the KRMFunctionDefinition as posted
    digest          text NOT NULL,
    spec            jsonb NOT NULL, -- its spec, the entry
    status          text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'approved', 'rejected')),
    reason          text NOT NULL DEFAULT '',
    catalog_version text,           -- the version its approval published
    created_at      timestamptz NOT NULL DEFAULT now(),
    closed_at       timestamptz,
    closed_by       bigint REFERENCES publishers (id)
);
CREATE INDEX catalog_proposals_open ON catalog_proposals (catalog_id, proposer_id) WHERE status = 'open';
CREATE INDEX catalog_proposals_approved ON catalog_proposals (catalog_id, fn_group, kind) WHERE status = 'approved';
