SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 2::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.text_search @@ to_tsquery('english', $1) AND NOT (f.name_search @@ to_tsquery('english', $1) OR lower(f.kind) LIKE $2)
ORDER BY f.fn_group, f.kind
LIMIT $3 OFFSET $4
-- args: ["set:* \u0026 names:*","setnames%",21,40]
