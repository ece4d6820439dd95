SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 1::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.publisher = $1 AND f.search @@ $2::tsquery AND NOT f.text_search @@ $2::tsquery AND NOT (f.name_search @@ $2::tsquery OR lower(f.kind) LIKE $3)
ORDER BY f.fn_group, f.kind
LIMIT $4 OFFSET $5
-- args: ["acme","('set' | 'setup') \u0026 ('name':*)","setnames%",21,40]
