package catalog

import (
	"errors"
	"fmt"
)

// ErrNotPublishable is a file that is not exactly one catalog or function definition.
var ErrNotPublishable = errors.New("not one catalog or function definition")

// Publishable is a file holding exactly one valid KRMFunctionCatalog (or Catalog) or
// KRMFunctionDefinition: what publish sends to the service and push sends to a registry.
// Exactly one of Catalog and Definition is set.
type Publishable struct {
	Document   *Document
	Catalog    *Catalog
	Definition *Definition
}

// Name is what the document is known by: the catalog's name, or the function's group/Kind.
func (p *Publishable) Name() string {
	if p.Catalog != nil {
		return p.Catalog.Name
	}
	return p.Definition.Function.ID()
}

// ReadPublishable validates file's bytes and classifies them. Findings with errors mean the
// document is invalid (the caller reports them, and Publishable is nil); a file of several
// documents or of another kind is ErrNotPublishable.
func (v *Validator) ReadPublishable(file string, data []byte) (*Publishable, Findings, error) {
	docs, findings := v.Validate(file, data, Options{})
	if findings.HasErrors() {
		return nil, findings, nil
	}
	if len(docs) != 1 {
		return nil, findings, fmt.Errorf("%s holds %d documents: %w", file, len(docs), ErrNotPublishable)
	}
	p := &Publishable{Document: docs[0]}
	var err error
	switch docs[0].Kind {
	case KindCatalog, KindCatalogShort:
		p.Catalog, err = DecodeCatalog(docs[0])
	case KindDefinition:
		p.Definition, err = DecodeDefinition(docs[0])
	default:
		return nil, findings, fmt.Errorf("%s is a %s: %w", file, docs[0].Kind, ErrNotPublishable)
	}
	if err != nil {
		return nil, findings, fmt.Errorf("decode %s: %w", file, err)
	}
	return p, findings, nil
}
