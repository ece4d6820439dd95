WITH probe AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) LIMIT $3),
m0 AS MATERIALIZED (SELECT * FROM probe LIMIT $4),
m1 AS MATERIALIZED ((SELECT * FROM probe f WHERE f.publisher = $5 LIMIT $4)
  UNION ALL (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND f.publisher = $5 AND (SELECT count(*) FROM probe) = $3 AND f.id NOT IN (SELECT id FROM probe)) LIMIT $4)
SELECT -1, publisher, NULL::int, NULL::text[], NULL::text[] FROM m0
UNION ALL SELECT -2, NULL::text, NULL::int, tags, runtimes FROM m1
-- samples of publisher, tag, runtime, total (-1: kept): [0 1 1 1]
-- args: ["('set' | 'setup') \u0026 ('name':*)","setnames%",2004,501,"acme"]
