SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 0::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.tags @> $1::text[]
ORDER BY f.fn_group, f.kind
LIMIT $2 OFFSET $3
-- args: [["networking"],21,40]
