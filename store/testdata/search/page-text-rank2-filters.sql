SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 2::real AS rank
FROM functions f WHERE cardinality(f.versions) > 0 AND f.tags @> $1::text[] AND f.publisher = $2 AND $3::text = ANY(f.runtimes) AND f.text_search @@ $4::tsquery AND NOT (f.name_search @@ $4::tsquery OR lower(f.kind) LIKE $5)
ORDER BY f.fn_group, f.kind
LIMIT $6 OFFSET $7
-- args: [["networking","security"],"acme","exec","('set' | 'setup') \u0026 ('name':*)","setnames%",21,40]
