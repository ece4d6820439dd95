ALTER TABLE functions RESET (autovacuum_analyze_scale_factor, autovacuum_vacuum_scale_factor);
ALTER INDEX functions_search SET (fastupdate = on);
ALTER INDEX functions_tags SET (fastupdate = on);
ALTER INDEX functions_runtimes SET (fastupdate = on);
