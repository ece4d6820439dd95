WITH probe AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) LIMIT $3),
m0 AS MATERIALIZED ((SELECT * FROM probe f WHERE f.tags @> $4::text[] LIMIT $5)
  UNION ALL (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND f.tags @> $4::text[] AND (SELECT count(*) FROM probe) = $3 AND f.id NOT IN (SELECT id FROM probe)) LIMIT $5),
m1 AS MATERIALIZED (SELECT * FROM probe LIMIT $5)
SELECT 0, NULL, count(*)::int FROM m0
UNION ALL SELECT 0, publisher, count(*)::int FROM m0 GROUP BY 2
UNION ALL SELECT 1, NULL, count(*)::int FROM m1
UNION ALL SELECT 1, v, count(*)::int FROM m1, unnest(tags) AS v GROUP BY 2
UNION ALL SELECT 2, NULL, count(*)::int FROM m0
UNION ALL SELECT 2, v, count(*)::int FROM m0, unnest(runtimes) AS v GROUP BY 2
UNION ALL SELECT 3, NULL, count(*)::int FROM m0
-- args: ["('set' | 'setup') \u0026 ('name':*)","setnames%",2004,["networking"],501]
