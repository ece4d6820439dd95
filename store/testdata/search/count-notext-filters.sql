WITH m0 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.tags @> $1::text[] AND f.runtimes @> ARRAY[$2::text] LIMIT $3),
m1 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.publisher = $4 AND f.runtimes @> ARRAY[$2::text] LIMIT $3),
m2 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.tags @> $1::text[] AND f.publisher = $4 LIMIT $3),
m3 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.tags @> $1::text[] AND f.publisher = $4 AND f.runtimes @> ARRAY[$2::text] LIMIT $3)
SELECT 0, NULL, count(*)::int FROM m0
UNION ALL SELECT 0, publisher, count(*)::int FROM m0 GROUP BY 2
UNION ALL SELECT 1, NULL, count(*)::int FROM m1
UNION ALL SELECT 1, v, count(*)::int FROM m1, unnest(tags) AS v GROUP BY 2
UNION ALL SELECT 2, NULL, count(*)::int FROM m2
UNION ALL SELECT 2, v, count(*)::int FROM m2, unnest(runtimes) AS v GROUP BY 2
UNION ALL SELECT 3, NULL, count(*)::int FROM m3
-- args: [["networking","security"],"exec",501,"acme"]
