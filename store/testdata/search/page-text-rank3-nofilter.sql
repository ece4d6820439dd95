SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 3::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND (f.name_search @@ to_tsquery('english', $1) OR lower(f.kind) LIKE $2) AND lower(f.kind) <> $3
ORDER BY f.fn_group, f.kind
LIMIT $4 OFFSET $5
-- args: ["set:* \u0026 names:*","setnames%","setnames",21,40]
