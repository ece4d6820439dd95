SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 0::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.tags @> $1::text[] AND f.publisher = $2 AND f.runtimes @> ARRAY[$3::text]
ORDER BY f.fn_group, f.kind
LIMIT $4 OFFSET $5
-- args: [["networking","security"],"acme","exec",21,40]
