WITH probe AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) LIMIT $3),
m0 AS MATERIALIZED ((SELECT * FROM probe f WHERE f.tags @> $4::text[] LIMIT $5)
  UNION ALL (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND f.tags @> $4::text[] AND (SELECT count(*) FROM probe) = $3 AND f.id NOT IN (SELECT id FROM probe)) LIMIT $5),
m1 AS MATERIALIZED (SELECT * FROM probe LIMIT $5)
SELECT -1, publisher, NULL::int, NULL::text[], runtimes FROM m0
UNION ALL SELECT -2, NULL::text, NULL::int, tags, NULL::text[] FROM m1
-- samples of publisher, tag, runtime, total (-1: kept): [0 1 0 0]
-- args: ["('set' | 'setup') \u0026 ('name':*)","setnames%",2004,["networking"],501]
