SELECT 0, value, count FROM facet_totals WHERE facet = 'publisher' AND count > 0
UNION ALL SELECT 1, value, count FROM facet_totals WHERE facet = 'tag' AND count > 0
UNION ALL SELECT 2, value, count FROM facet_totals WHERE facet = 'runtime' AND count > 0
UNION ALL SELECT 4, NULL, coalesce(sum(count), 0)::int FROM facet_totals WHERE facet = 'publisher' AND count > 0
-- args: null
