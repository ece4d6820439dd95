SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 3::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.publisher = $1 AND (f.name_search @@ $2::tsquery OR lower(f.kind) LIKE $3) AND lower(f.kind) <> $4
ORDER BY f.fn_group, f.kind
LIMIT $5 OFFSET $6
-- args: ["acme","('set' | 'setup') \u0026 ('name':*)","setnames%","setnames",21,40]
