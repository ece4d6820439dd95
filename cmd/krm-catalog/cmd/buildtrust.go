package cmd

// Declared records how a kustomization of the build spelled a local catalog, so that
// --trusted-catalog may name it so (kustomize.Declarations).
func (p *preparers) Declared(ref, written string) {
	if p.o.declared == nil {
		p.o.declared = map[string][]string{}
	}
	p.o.declared[ref] = append(p.o.declared[ref], written)
}
