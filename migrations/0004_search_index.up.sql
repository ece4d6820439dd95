-- The search indexes take their entries at once instead of through GIN's pending list. The list made
-- writes cheaper, but every search scanned it linearly until a vacuum merged it, and the planner,
-- counting its pages, preferred a sequential scan: right after a publish, searches ran ten times
-- slower. Publishes are rare and searches are not.
ALTER INDEX functions_search SET (fastupdate = off);
ALTER INDEX functions_tags SET (fastupdate = off);
ALTER INDEX functions_runtimes SET (fastupdate = off);
SELECT gin_clean_pending_list(i::regclass) FROM unnest(ARRAY['functions_search', 'functions_tags', 'functions_runtimes']) AS i;

-- Every publish rewrites the rows of the functions it touches; analyze and vacuum them sooner than
-- the defaults (10% and 20% of the table) so that plans follow the data.
ALTER TABLE functions SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_scale_factor = 0.05);
