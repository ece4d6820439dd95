-- Search ranks in tiers (docs/api.md): an exact kind first, then functions whose name holds every
-- word, then name and description, then everything else (tags, publisher). Each tier has its own
-- text column and index, so that the planner's statistics see how many rows each tier holds, and
-- a page is read tier by tier in name order, without ranking every match.
--
-- name_words no longer holds the whole kind as one word (store.nameWords: kinds are unique, so
-- each added a word only one function has, and a prefix such as "set" expanded to thousands of
-- them); it splits the kind at capitals and between letters and digits. A kind is found by its
-- beginning through functions_kind_lower (text_pattern_ops: for = and LIKE 'prefix%').
UPDATE functions SET name_words = concat_ws(' ',
    fn_group,
    array_to_string(regexp_split_to_array(fn_group, '[.-]'), ' '),
    regexp_replace(regexp_replace(regexp_replace(kind, '(.)(?=[A-Z])', '\1 ', 'g'),
        '([^0-9 ])(?=[0-9])', '\1 ', 'g'), '([0-9])(?=[^0-9 ])', '\1 ', 'g'));
ALTER TABLE functions
    ADD COLUMN name_search tsvector GENERATED ALWAYS AS (to_tsvector('english', name_words)) STORED,
    ADD COLUMN text_search tsvector GENERATED ALWAYS AS (to_tsvector('english', name_words || ' ' || description)) STORED;
CREATE INDEX functions_name_search ON functions USING gin (name_search) WITH (fastupdate = off);
CREATE INDEX functions_text_search ON functions USING gin (text_search) WITH (fastupdate = off);
CREATE INDEX functions_kind_lower ON functions (lower(kind) text_pattern_ops);
ANALYZE functions;
