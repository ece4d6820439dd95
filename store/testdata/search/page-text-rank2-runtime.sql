SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 2::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND $1::text = ANY(f.runtimes) AND f.text_search @@ $2::tsquery AND NOT (f.name_search @@ $2::tsquery OR lower(f.kind) LIKE $3)
ORDER BY f.fn_group, f.kind
LIMIT $4 OFFSET $5
-- args: ["exec","('set' | 'setup') \u0026 ('name':*)","setnames%",21,40]
