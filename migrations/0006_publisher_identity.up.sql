-- Groups are owned per group (issue #14). A publisher owns, by its name, the group that is its name
-- and the groups under it (acme.dev owns acme.dev and fn.acme.dev); any other group is granted to
-- a publisher by an admin. Of a group's ancestors (fn.acme.dev, acme.dev, dev), the most specific
-- one with a grant or a publisher of that name decides its owner; at one level a grant wins.
CREATE TABLE group_grants (
    fn_group     text PRIMARY KEY CHECK (fn_group <> ''),
    publisher_id bigint NOT NULL REFERENCES publishers (id),
    reason       text NOT NULL DEFAULT '',
    granted_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX group_grants_publisher ON group_grants (publisher_id);

-- Groups whose ownership this migration could not carry over without guessing: more than one
-- publisher had functions in the group, or one had, but another publisher's name covers the group.
-- No grant is made for them; `krm-catalog publisher list` shows them until an admin grants the group.
CREATE TABLE group_conflicts (
    fn_group    text PRIMARY KEY,
    name_owner  text,            -- the publisher whose name covers the group, if any
    functions   jsonb NOT NULL,  -- {"publisher": ["Kind", ...], ...}: who had which kinds
    detected_at timestamptz NOT NULL DEFAULT now()
);

-- Carry today's per-kind owners over: per group, who registered its functions, and which existing
-- publisher's name covers it most specifically.
CREATE TABLE group_owners_0006 AS
SELECT o.fn_group, o.publishers, o.functions,
       (SELECT p.name FROM publishers p
        WHERE o.fn_group = p.name OR right(o.fn_group, length(p.name) + 1) = '.' || p.name
        ORDER BY length(p.name) DESC LIMIT 1) AS name_owner
FROM (
    SELECT fn_group,
           array_agg(DISTINCT publisher_id) AS publishers,
           (SELECT jsonb_object_agg(k.publisher, k.kinds) FROM (
                SELECT p.name AS publisher, jsonb_agg(f2.kind ORDER BY f2.kind) AS kinds
                FROM functions f2 JOIN publishers p ON p.id = f2.publisher_id
                WHERE f2.fn_group = f.fn_group GROUP BY p.name) k) AS functions
    FROM functions f
    GROUP BY fn_group
) o;

-- One publisher, and no publisher's name covers the group: the group is granted to it.
INSERT INTO group_grants (fn_group, publisher_id, reason)
SELECT fn_group, publishers[1], 'migration 0006: it registered every function of the group'
FROM group_owners_0006
WHERE cardinality(publishers) = 1 AND name_owner IS NULL;

-- One publisher, whose own name covers the group: nothing to grant. Anything else is a conflict.
INSERT INTO group_conflicts (fn_group, name_owner, functions)
SELECT o.fn_group, o.name_owner, o.functions
FROM group_owners_0006 o
WHERE NOT (cardinality(o.publishers) = 1 AND o.name_owner IS NULL)
  AND NOT (cardinality(o.publishers) = 1 AND o.publishers[1] = (SELECT id FROM publishers WHERE name = o.name_owner));
DROP TABLE group_owners_0006;

-- A key needs proof that its publisher holds the private half. A removed key stays, as history.
ALTER TABLE publisher_keys
    ADD COLUMN proven_at      timestamptz,
    ADD COLUMN removed_at     timestamptz,
    ADD COLUMN removed_reason text;
ALTER TABLE publisher_keys DROP CONSTRAINT publisher_keys_publisher_id_fingerprint_key;
CREATE UNIQUE INDEX publisher_keys_active ON publisher_keys (publisher_id, fingerprint) WHERE removed_at IS NULL;

-- Keys registered before proof was asked for may be anyone's: they stop counting (the publisher
-- registers them again, with proof), and what they verified is checked again.
UPDATE publisher_keys SET removed_at = now(), removed_reason = 'registered without proof of possession (migration 0006)';
DELETE FROM signature_checks WHERE status = 'verified';

-- Challenges a publisher signs to register a key: single use, until they expire.
CREATE TABLE key_challenges (
    id           bigint GENERATED ALWAYS AS IDENTITY,
    nonce        text PRIMARY KEY,
    publisher_id bigint NOT NULL REFERENCES publishers (id),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX key_challenges_publisher ON key_challenges (publisher_id, id);
CREATE INDEX key_challenges_expiry ON key_challenges (expires_at);
