WITH m0 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.runtimes @> ARRAY[$1::text] LIMIT $2)
SELECT 2, value, count, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'runtime' AND count > 0
UNION ALL SELECT 4, NULL::text, coalesce(sum(count), 0)::int, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'runtime' AND count > 0 AND value = $3
UNION ALL SELECT -1, publisher, NULL::int, tags, NULL::text[] FROM m0
-- samples of publisher, tag, runtime, total (-1: kept): [0 0 -1 -1]
-- args: ["exec",501,"exec"]
