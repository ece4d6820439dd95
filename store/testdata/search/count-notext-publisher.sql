WITH m0 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.publisher = $1 LIMIT $2)
SELECT 0, value, count, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'publisher' AND count > 0
UNION ALL SELECT 4, NULL::text, coalesce(sum(count), 0)::int, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'publisher' AND count > 0 AND value = $3
UNION ALL SELECT -1, NULL::text, NULL::int, tags, runtimes FROM m0
-- samples of publisher, tag, runtime, total (-1: kept): [-1 0 0 -1]
-- args: ["acme",501,"acme"]
