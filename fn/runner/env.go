package runner

import (
	"fmt"
	"strings"
)

// ParseEnv reads --env values as kpt fn eval and docker run do: NAME=VALUE passes that value, NAME
// alone passes the caller's value of NAME (nothing when it is unset). Functions get these on top of
// their minimal environment, and nothing else of the caller's.
func ParseEnv(specs []string, lookupEnv func(string) (string, bool)) ([]string, error) {
	var env []string
	for _, s := range specs {
		name, value, hasValue := strings.Cut(s, "=")
		if err := envName(name); err != nil {
			return nil, fmt.Errorf("--env %q: %w", s, err)
		}
		if !hasValue {
			v, ok := lookupEnv(name)
			if !ok {
				continue
			}
			value = v
		}
		env = append(env, name+"="+value)
	}
	return env, nil
}

// envName accepts the names a POSIX shell can set: letters, digits and underscores, not starting
// with a digit.
func envName(name string) error {
	if name == "" {
		return fmt.Errorf("give NAME or NAME=VALUE")
	}
	for i, c := range name {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", name)
		}
	}
	return nil
}
