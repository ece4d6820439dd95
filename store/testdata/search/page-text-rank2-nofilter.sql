SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 2::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.text_search @@ $1::tsquery AND NOT (f.name_search @@ $1::tsquery OR lower(f.kind) LIKE $2)
ORDER BY f.fn_group, f.kind
LIMIT $3 OFFSET $4
-- args: ["('set' | 'setup') \u0026 ('name':*)","setnames%",21,40]
