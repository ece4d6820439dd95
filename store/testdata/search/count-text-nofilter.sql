WITH m0s AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND f.id % 8 = 0 LIMIT $3),
m0 AS MATERIALIZED ((SELECT * FROM m0s WHERE (SELECT count(*) FROM m0s) = $3)
  UNION ALL (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND NOT (SELECT count(*) FROM m0s) = $3 LIMIT $3))
SELECT -1, publisher, NULL::int, tags, runtimes FROM m0
-- samples of publisher, tag, runtime, total (-1: kept): [0 0 0 0]
-- args: ["('set' | 'setup') \u0026 ('name':*)","setnames%",501]
