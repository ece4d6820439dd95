package web

import (
	"slices"
	"strconv"
	"strings"

	"github.com/krm-catalog/krm-catalog/internal/lazyre"
)

var kubeVersion = lazyre.New(`^v([1-9][0-9]{0,8})(?:(alpha|beta)([1-9][0-9]{0,8}))?$`)

// versionRank orders a Kubernetes-style API version: general availability before beta before
// alpha, and higher numbers first within each (v2, v1, v1beta2, v1beta1, v1alpha1), as kubectl
// orders versions. Names of another shape come after all of them.
type versionRank struct {
	kube              bool
	stability         int // 2 GA, 1 beta, 0 alpha
	major, prerelease int
}

func rankOf(v string) versionRank {
	m := kubeVersion().FindStringSubmatch(v)
	if m == nil {
		return versionRank{}
	}
	r := versionRank{kube: true, stability: 2}
	r.major, _ = strconv.Atoi(m[1])
	switch m[2] {
	case "beta":
		r.stability = 1
	case "alpha":
		r.stability = 0
	}
	if m[3] != "" {
		r.prerelease, _ = strconv.Atoi(m[3])
	}
	return r
}

// compareVersions sorts versions newest and most stable first.
func compareVersions(a, b string) int {
	ra, rb := rankOf(a), rankOf(b)
	switch {
	case ra.kube != rb.kube:
		if ra.kube {
			return -1
		}
		return 1
	case !ra.kube:
		return strings.Compare(a, b)
	case ra.stability != rb.stability:
		return rb.stability - ra.stability
	case ra.major != rb.major:
		return rb.major - ra.major
	case ra.prerelease != rb.prerelease:
		return rb.prerelease - ra.prerelease
	}
	return 0
}

// sortVersions returns the distinct versions, newest and most stable first: the first is the one
// a function page shows by default.
func sortVersions(vs []string) []string {
	out := slices.Clone(vs)
	slices.SortFunc(out, compareVersions)
	return slices.Compact(out)
}
