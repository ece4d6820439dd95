SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 0::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.publisher = $1
ORDER BY f.fn_group, f.kind
LIMIT $2 OFFSET $3
-- args: ["acme",21,40]
