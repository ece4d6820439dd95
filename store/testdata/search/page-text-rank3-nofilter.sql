SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 3::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND (f.name_search @@ $1::tsquery OR lower(f.kind) LIKE $2) AND lower(f.kind) <> $3
ORDER BY f.fn_group, f.kind
LIMIT $4 OFFSET $5
-- args: ["('set' | 'setup') \u0026 ('name':*)","setnames%","setnames",21,40]
