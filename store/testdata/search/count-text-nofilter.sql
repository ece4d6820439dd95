WITH m0s AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND f.id % 8 = 0 LIMIT $3),
m0 AS MATERIALIZED ((SELECT * FROM m0s WHERE (SELECT count(*) FROM m0s) = $3)
  UNION ALL (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND NOT (SELECT count(*) FROM m0s) = $3 LIMIT $3))
SELECT 0, NULL, count(*)::int FROM m0
UNION ALL SELECT 0, publisher, count(*)::int FROM m0 GROUP BY 2
UNION ALL SELECT 1, NULL, count(*)::int FROM m0
UNION ALL SELECT 1, v, count(*)::int FROM m0, unnest(tags) AS v GROUP BY 2
UNION ALL SELECT 2, NULL, count(*)::int FROM m0
UNION ALL SELECT 2, v, count(*)::int FROM m0, unnest(runtimes) AS v GROUP BY 2
UNION ALL SELECT 3, NULL, count(*)::int FROM m0
-- args: ["('set' | 'setup') \u0026 ('name':*)","setnames%",501]
