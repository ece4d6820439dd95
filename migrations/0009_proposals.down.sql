DROP TABLE catalog_proposals;
