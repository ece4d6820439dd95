SELECT 0, value, count, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'publisher' AND count > 0
UNION ALL SELECT 1, value, count, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'tag' AND count > 0
UNION ALL SELECT 2, value, count, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'runtime' AND count > 0
UNION ALL SELECT 4, NULL::text, coalesce(sum(count), 0)::int, NULL::text[], NULL::text[] FROM facet_totals WHERE facet = 'publisher' AND count > 0
-- samples of publisher, tag, runtime, total (-1: kept): [-1 -1 -1 -1]
-- args: null
