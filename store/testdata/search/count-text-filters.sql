WITH probe AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) LIMIT $3),
m0 AS MATERIALIZED ((SELECT * FROM probe f WHERE f.tags @> $4::text[] AND $5::text = ANY(f.runtimes) LIMIT $6)
  UNION ALL (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND f.tags @> $4::text[] AND $5::text = ANY(f.runtimes) AND (SELECT count(*) FROM probe) = $3 AND f.id NOT IN (SELECT id FROM probe)) LIMIT $6),
m1 AS MATERIALIZED ((SELECT * FROM probe f WHERE f.publisher = $7 AND $5::text = ANY(f.runtimes) LIMIT $6)
  UNION ALL (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND f.publisher = $7 AND $5::text = ANY(f.runtimes) AND (SELECT count(*) FROM probe) = $3 AND f.id NOT IN (SELECT id FROM probe)) LIMIT $6),
m2 AS MATERIALIZED ((SELECT * FROM probe f WHERE f.tags @> $4::text[] AND f.publisher = $7 LIMIT $6)
  UNION ALL (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND f.tags @> $4::text[] AND f.publisher = $7 AND (SELECT count(*) FROM probe) = $3 AND f.id NOT IN (SELECT id FROM probe)) LIMIT $6),
m3 AS MATERIALIZED ((SELECT * FROM probe f WHERE f.tags @> $4::text[] AND f.publisher = $7 AND $5::text = ANY(f.runtimes) LIMIT $6)
  UNION ALL (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ $1::tsquery OR f.kind_lower LIKE $2) AND f.tags @> $4::text[] AND f.publisher = $7 AND $5::text = ANY(f.runtimes) AND (SELECT count(*) FROM probe) = $3 AND f.id NOT IN (SELECT id FROM probe)) LIMIT $6)
SELECT -1, publisher, NULL::int, NULL::text[], NULL::text[] FROM m0
UNION ALL SELECT -2, NULL::text, NULL::int, tags, NULL::text[] FROM m1
UNION ALL SELECT -3, NULL::text, NULL::int, NULL::text[], runtimes FROM m2
UNION ALL SELECT -4, NULL::text, NULL::int, NULL::text[], NULL::text[] FROM m3
-- samples of publisher, tag, runtime, total (-1: kept): [0 1 2 3]
-- args: ["('set' | 'setup') \u0026 ('name':*)","setnames%",2004,["networking","security"],"exec",501,"acme"]
