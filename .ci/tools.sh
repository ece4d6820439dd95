#!/usr/bin/env bash
# Builds the CLIs the OCI interop tests and benchmarks compare against, and helm (which the chart's
# test runs), from the Go module proxy, at pinned versions, into a cache directory; prints that
# directory. A binary already built at the pinned
# version is kept, so a warm run costs a few `go version -m` calls.
#
#   KRM_CATALOG_TOOLS_BIN="$(.ci/tools.sh)" go test ./cmd/krm-catalog/cmd -run TestOCIInterop
#   .ci/tools.sh helm      # only the tools named
#
# The directory defaults to $HOME/.cache/krm-catalog-ci/bin; override with KRM_CATALOG_TOOLS_BIN.
set -euo pipefail

COSIGN_V2_VERSION=v2.6.5
COSIGN_V3_VERSION=v3.1.3
ORAS_VERSION=v1.3.3
HELM_VERSION=v3.22.0
DISTRIBUTION_VERSION=v3.1.2

bin="${KRM_CATALOG_TOOLS_BIN:-$HOME/.cache/krm-catalog-ci/bin}"
mkdir -p "$bin"
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0

# built NAME MODULE VERSION: whether $bin/NAME exists and was built from MODULE at VERSION.
built() {
  [ -x "$bin/$1" ] || return 1
  go version -m "$bin/$1" 2>/dev/null | awk -v m="$2" -v v="$3" '$1 == "mod" && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}

# install NAME PKG MODULE VERSION: builds PKG of MODULE@VERSION as $bin/NAME.
install() {
  local name=$1 pkg=$2 mod=$3 version=$4
  if built "$name" "$mod" "$version"; then return; fi
  echo "building $name ($mod@$version)" >&2
  local tmp
  tmp=$(mktemp -d)
  # A throwaway module: `go install pkg@version` refuses modules whose go.mod has replace
  # directives (oras does), while building inside a module that requires it does not.
  (
    cd "$tmp"
    go mod init krm-catalog-ci-tools >/dev/null 2>&1
    # Getting the package (not just the module) records the go.sum entries its imports need.
    go get "$pkg@$version" >&2
    GOBIN="$tmp/out" go install "$pkg"
  )
  mv "$tmp/out/$(basename "$pkg")" "$bin/$name.tmp"
  mv "$bin/$name.tmp" "$bin/$name"
  rm -rf "$tmp"
}

# wanted NAME: whether NAME is among the tools asked for (all of them when none is named).
wanted() {
  [ "${#only[@]}" -eq 0 ] && return 0
  local n
  for n in "${only[@]}"; do [ "$n" = "$1" ] && return 0; done
  return 1
}
only=("$@")

wanted cosign-v2 && install cosign-v2 github.com/sigstore/cosign/v2/cmd/cosign github.com/sigstore/cosign/v2 "$COSIGN_V2_VERSION"
wanted cosign-v3 && install cosign-v3 github.com/sigstore/cosign/v3/cmd/cosign github.com/sigstore/cosign/v3 "$COSIGN_V3_VERSION"
wanted oras && install oras oras.land/oras/cmd/oras oras.land/oras "$ORAS_VERSION"
# the registry the README starts with `go run ...@$DISTRIBUTION_VERSION`: building it here fills the
# module cache, so that the README's test runs that line without the network
wanted registry && install registry github.com/distribution/distribution/v3/cmd/registry github.com/distribution/distribution/v3 "$DISTRIBUTION_VERSION"
wanted helm && install helm helm.sh/helm/v3/cmd/helm helm.sh/helm/v3 "$HELM_VERSION"
echo "$bin"
