// Package catalog is the domain of krm-catalog: the documents of KEP-2906 and KEP-2299
// (KRMFunctionCatalog, KRMFunctionDefinition, and the ResourceList and Composition documents that
// name functions), read and checked.
//
// Decode reads YAML or JSON, one or many documents, and keeps each document's bytes as they were
// written, since digests and signatures cover those bytes. Validator checks a decoded document
// against its embedded JSON Schema (package schemas) and then against the rules a schema cannot say
// (uniqueness, pinning, platforms; docs/design.md §3), and reports each problem as a Finding that
// names the file, the document, a JSON pointer and the YAML line and column. The typed model
// (Catalog, Function, Version, Runtime) is what the resolver, the store and the website read.
package catalog
