-- Facet counts over every current function, kept up to date by each publish, so that browsing
-- everything (the empty search, the website's home page) does not count thousands of rows.
CREATE TABLE facet_totals (
    facet text NOT NULL CHECK (facet IN ('publisher', 'tag', 'runtime')),
    value text NOT NULL,
    count integer NOT NULL, -- no CHECK (count >= 0): it would be tested on the row proposed for insertion, before ON CONFLICT adds a negative change to the existing row
    PRIMARY KEY (facet, value)
);

INSERT INTO facet_totals (facet, value, count)
SELECT 'publisher', publisher, count(*) FROM functions WHERE cardinality(versions) > 0 GROUP BY publisher
UNION ALL
SELECT 'tag', t, count(*) FROM functions, unnest(tags) AS t WHERE cardinality(versions) > 0 GROUP BY t
UNION ALL
SELECT 'runtime', r, count(*) FROM functions, unnest(runtimes) AS r WHERE cardinality(versions) > 0 GROUP BY r;
