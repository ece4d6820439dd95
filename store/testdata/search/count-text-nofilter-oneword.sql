WITH m0 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE (f.search @@ to_tsquery('english', $1) OR f.kind_lower LIKE $2) LIMIT $3)
SELECT -1, publisher, NULL::int, tags, runtimes FROM m0
-- samples of publisher, tag, runtime, total (-1: kept): [0 0 0 0]
-- args: ["namespace:*","namespace%",501]
