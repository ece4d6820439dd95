WITH exact AS MATERIALIZED (SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 4::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.publisher = $1 AND lower(f.kind) = $2)
SELECT * FROM exact ORDER BY fn_group, kind
LIMIT $3 OFFSET $4
-- args: ["acme","setnames",21,40]
