-- Search ranks in tiers (docs/api.md): an exact kind first, then functions whose name holds every
-- word, then name and description, then everything else (tags, publisher). Each tier has its own
-- text column and index, so that the planner's statistics see how many rows each tier holds, and
-- a page is read tier by tier in name order, without ranking every match.
ALTER TABLE functions
    ADD COLUMN name_search tsvector GENERATED ALWAYS AS (to_tsvector('english', name_words)) STORED,
    ADD COLUMN text_search tsvector GENERATED ALWAYS AS (to_tsvector('english', name_words || ' ' || description)) STORED;
CREATE INDEX functions_name_search ON functions USING gin (name_search) WITH (fastupdate = off);
CREATE INDEX functions_text_search ON functions USING gin (text_search) WITH (fastupdate = off);
CREATE INDEX functions_kind_lower ON functions (lower(kind));
ANALYZE functions;
