WITH m0 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.tags @> $1::text[] LIMIT $2)
SELECT 1, value, count, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'tag' AND count > 0
UNION ALL SELECT 4, NULL::text, coalesce(sum(count), 0)::int, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'tag' AND count > 0 AND value = $3
UNION ALL SELECT -1, publisher, NULL::int, NULL::text[], runtimes FROM m0
-- samples of publisher, tag, runtime, total (-1: kept): [0 -1 0 -1]
-- args: [["networking"],501,"networking"]
