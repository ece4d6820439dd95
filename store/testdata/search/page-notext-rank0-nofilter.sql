SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 0::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0
ORDER BY f.fn_group, f.kind
LIMIT $1 OFFSET $2
-- args: [21,40]
