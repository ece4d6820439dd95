WITH m0 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.tags @> $1::text[] AND f.runtimes @> ARRAY[$2::text] LIMIT $3),
m1 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.publisher = $4 AND f.runtimes @> ARRAY[$2::text] LIMIT $3),
m2 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.tags @> $1::text[] AND f.publisher = $4 LIMIT $3),
m3 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.tags @> $1::text[] AND f.publisher = $4 AND f.runtimes @> ARRAY[$2::text] LIMIT $3)
SELECT -1, publisher, NULL::int, NULL::text[], NULL::text[] FROM m0
UNION ALL SELECT -2, NULL::text, NULL::int, tags, NULL::text[] FROM m1
UNION ALL SELECT -3, NULL::text, NULL::int, NULL::text[], runtimes FROM m2
UNION ALL SELECT -4, NULL::text, NULL::int, NULL::text[], NULL::text[] FROM m3
-- samples of publisher, tag, runtime, total (-1: kept): [0 1 2 3]
-- args: [["networking","security"],"exec",501,"acme"]
