-- Publishers own catalogs and functions; tokens act for them.
CREATE TABLE publishers (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (name <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- API tokens are shown once; only their SHA-256 is kept.
CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    publisher_id bigint NOT NULL REFERENCES publishers (id),
    token_hash   bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    hint         text NOT NULL,
    description  text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_publisher ON api_tokens (publisher_id);

-- A catalog name belongs to the publisher that first published it.
CREATE TABLE catalogs (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name              text NOT NULL UNIQUE,
    publisher_id      bigint NOT NULL REFERENCES publishers (id),
    latest_version_id bigint,
    created_at        timestamptz NOT NULL DEFAULT now()
);

-- Catalog versions are immutable: the bytes as published, and their digest.
CREATE TABLE catalog_versions (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    catalog_id   bigint NOT NULL REFERENCES catalogs (id),
    version      text NOT NULL,
    content      bytea NOT NULL,
    digest       text NOT NULL,
    publisher_id bigint NOT NULL REFERENCES publishers (id),
    published_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (catalog_id, version)
);
ALTER TABLE catalogs ADD FOREIGN KEY (latest_version_id) REFERENCES catalog_versions (id);

-- A function (group/kind) belongs to the publisher that first published it, and carries the
-- denormalized current view that search reads: the latest catalog versions and definitions.
CREATE TABLE functions (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fn_group     text NOT NULL,
    kind         text NOT NULL,
    publisher_id bigint NOT NULL REFERENCES publishers (id),
    publisher    text NOT NULL,
    -- the current view; versions is empty when no current catalog or definition lists the function
    description  text NOT NULL DEFAULT '',
    tags         text[] NOT NULL DEFAULT '{}',
    runtimes     text[] NOT NULL DEFAULT '{}',
    versions     text[] NOT NULL DEFAULT '{}',
    catalogs     text[] NOT NULL DEFAULT '{}',
    name_words   text NOT NULL DEFAULT '',
    tag_words    text NOT NULL DEFAULT '',
    updated_at   timestamptz NOT NULL DEFAULT now(),
    search       tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', name_words), 'A') ||
        setweight(to_tsvector('english', description), 'B') ||
        setweight(to_tsvector('english', tag_words || ' ' || publisher), 'C')
    ) STORED,
    UNIQUE (fn_group, kind)
);
CREATE INDEX functions_search ON functions USING gin (search);
CREATE INDEX functions_tags ON functions USING gin (tags);
CREATE INDEX functions_runtimes ON functions USING gin (runtimes);
CREATE INDEX functions_publisher ON functions (publisher);

-- Standalone KRMFunctionDefinition documents; each publish that adds versions is a new revision.
CREATE TABLE definition_revisions (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    function_id  bigint NOT NULL REFERENCES functions (id),
    content      bytea NOT NULL,
    digest       text NOT NULL,
    publisher_id bigint NOT NULL REFERENCES publishers (id),
    published_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX definition_revisions_function ON definition_revisions (function_id, id DESC);

-- Every function version of every catalog version and definition revision. "current" marks those
-- of the latest catalog versions and latest definition revisions.
CREATE TABLE function_versions (
    id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    function_id            bigint NOT NULL REFERENCES functions (id),
    version                text NOT NULL,
    catalog_version_id     bigint REFERENCES catalog_versions (id),
    definition_revision_id bigint REFERENCES definition_revisions (id),
    position               int NOT NULL,
    runtimes               text[] NOT NULL,
    image                  text,
    image_digest           text,
    spec                   jsonb NOT NULL,
    current                boolean NOT NULL DEFAULT false,
    CHECK (num_nonnulls(catalog_version_id, definition_revision_id) = 1)
);
CREATE INDEX function_versions_function ON function_versions (function_id) WHERE current;
CREATE INDEX function_versions_catalog ON function_versions (catalog_version_id);
CREATE INDEX function_versions_definition ON function_versions (definition_revision_id);

-- Who did what, when: every publish and every token change.
CREATE TABLE audit_log (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    publisher text NOT NULL,
    action    text NOT NULL,
    subject   text NOT NULL,
    details   jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at);
