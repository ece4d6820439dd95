// Package yaml11 holds what YAML 1.1 (yaml.v2, sigs.k8s.io/yaml: kubectl and the API server) reads
// differently from YAML 1.2 (yaml.v3, kyaml), for the packages that guard against it.
package yaml11

// OnlyBool reports whether a plain scalar is one of the booleans of YAML 1.1 that YAML 1.2 reads
// as a string (yes, On, n, OFF...). true and false are booleans to both.
func OnlyBool(v string) bool {
	switch v {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return false
}
