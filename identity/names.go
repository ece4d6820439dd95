package identity

import (
	"fmt"
	"strings"
)

// MaxNameLength is the longest DNS name.
const MaxNameLength = 253

// ValidateName checks a publisher name: a lower-case DNS name of at least two labels (so that no
// publisher owns a whole top-level domain by name), each label 1 to 63 letters, digits or '-',
// not starting or ending with '-'. The error says what is wrong, naming the name.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("publisher name is empty")
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("publisher name %q is longer than %d characters", name, MaxNameLength)
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return fmt.Errorf("publisher name %q must be a DNS name with at least two labels, such as example.com", name)
	}
	for _, l := range labels {
		if err := validateLabel(l); err != nil {
			return fmt.Errorf("publisher name %q must be a lower-case DNS name such as example.com: %s", name, err)
		}
	}
	return nil
}

func validateLabel(l string) error {
	switch {
	case l == "":
		return fmt.Errorf("it has an empty label")
	case len(l) > 63:
		return fmt.Errorf("label %q is longer than 63 characters", l)
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Errorf("label %q starts or ends with '-'", l)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("label %q has %q; only a-z, 0-9 and '-' are allowed", l, string(rune(c)))
		}
	}
	return nil
}

// ValidateGroup checks an API group a publisher can be granted: a lower-case DNS name, one label
// or more (catalog documents allow one-label groups).
func ValidateGroup(group string) error {
	if group == "" {
		return fmt.Errorf("group is empty")
	}
	if len(group) > MaxNameLength {
		return fmt.Errorf("group %q is longer than %d characters", group, MaxNameLength)
	}
	for _, l := range strings.Split(group, ".") {
		if err := validateLabel(l); err != nil {
			return fmt.Errorf("group %q must be a lower-case DNS name such as fn.example.com: %s", group, err)
		}
	}
	return nil
}

// Ancestors returns group and each domain above it, most specific first:
// fn.acme.dev → fn.acme.dev, acme.dev, dev. Ownership is decided by the first of them that has an
// owner.
func Ancestors(group string) []string {
	out := []string{group}
	for {
		_, rest, ok := strings.Cut(group, ".")
		if !ok {
			return out
		}
		out = append(out, rest)
		group = rest
	}
}

// CatalogDomain is the domain a catalog name claims, and whether it claims one. A catalog name is
// a DNS subdomain; one with a dot in it reads as a domain's, so it claims that domain: the name up
// to its last dot and the letters and digits after it, where a '-' ends the claim.
// "example.com" and "example.com-tools" claim example.com, "fn.example.com-v2" fn.example.com;
// "example-functions" claims none. A publisher may use a name only under a domain it may publish
// functions in (its name, or a grant): the same rule as function groups, so a name cannot pass one
// publisher's catalog off as another's.
func CatalogDomain(name string) (string, bool) {
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return "", false
	}
	end := len(name)
	if dash := strings.IndexByte(name[dot:], '-'); dash >= 0 {
		end = dot + dash
	}
	return name[:end], true
}
