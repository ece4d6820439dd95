WITH exact AS MATERIALIZED (SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 4::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.tags @> $1::text[] AND f.publisher = $2 AND $3::text = ANY(f.runtimes) AND lower(f.kind) = $4)
SELECT * FROM exact ORDER BY fn_group, kind
LIMIT $5 OFFSET $6
-- args: [["networking","security"],"acme","exec","setnames",21,40]
