-- What each version adds to the definition.yaml the service generates for a function that only
-- catalogs list, when the version is indexed: its size (store.derivedItemSize), or, negated, a
-- bound of it (store.derivedItemBound). A publish checks the generated definition against its
-- limit (store.MaxDerivedBytes) from these, without reading and decoding every current version of
-- the functions it changes. Rows indexed before have none; their size is measured from their spec
-- when needed.
ALTER TABLE function_versions ADD COLUMN derived_size integer;
