WITH exact AS MATERIALIZED (SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 4::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND lower(f.kind) = $1)
SELECT * FROM exact ORDER BY fn_group, kind
LIMIT $2 OFFSET $3
-- args: ["setnames",21,40]
