-- What each version adds to the definition.yaml the service generates for a function that only
-- catalogs list (store.derivedItemSize), measured when the version is indexed: a publish checks
-- the generated definition against its bound (store.MaxDerivedBytes) from these sizes, without
-- reading and decoding every current version of the functions it changes. Rows indexed before
-- have none; their size is measured from their spec when needed.
ALTER TABLE function_versions ADD COLUMN derived_size integer;
