WITH m0 AS MATERIALIZED (SELECT f.id, f.publisher, f.tags, f.runtimes FROM function_facets f WHERE f.publisher = $1 LIMIT $2)
SELECT 0, value, count FROM facet_totals WHERE facet = 'publisher' AND count > 0
UNION ALL SELECT 1, NULL, count(*)::int FROM m0
UNION ALL SELECT 1, v, count(*)::int FROM m0, unnest(tags) AS v GROUP BY 2
UNION ALL SELECT 2, NULL, count(*)::int FROM m0
UNION ALL SELECT 2, v, count(*)::int FROM m0, unnest(runtimes) AS v GROUP BY 2
UNION ALL SELECT 4, NULL, coalesce(sum(count), 0)::int FROM facet_totals WHERE facet = 'publisher' AND count > 0 AND value = $3
-- args: ["acme",501,"acme"]
