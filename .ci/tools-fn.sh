#!/usr/bin/env bash
# Builds the tools the function-runtime tests need (today: kustomize v5.8.2) from the Go module
# proxy into a cache directory, and prints the directory. Tests find the tools through
# KRM_CATALOG_TOOLS_BIN (or PATH). A tool already present at the right version is not rebuilt.
#
#   usage: .ci/tools-fn.sh [BIN_DIR]     (default: $HOME/.cache/krm-catalog-ci/bin)
set -euo pipefail

KUSTOMIZE_VERSION=v5.8.2
bin="${1:-${KRM_CATALOG_TOOLS_BIN:-$HOME/.cache/krm-catalog-ci/bin}}"
mkdir -p "$bin"

# built: whether $bin/kustomize exists and was built from the kustomize module at the pinned version.
built() {
  [ -x "$bin/kustomize" ] || return 1
  go version -m "$bin/kustomize" 2>/dev/null |
    awk -v v="$KUSTOMIZE_VERSION" '$1 == "mod" && $2 == "sigs.k8s.io/kustomize/kustomize/v5" && $3 == v { ok = 1 } END { exit !ok }'
}

if built; then
  echo "kustomize $KUSTOMIZE_VERSION already in $bin" >&2
else
  echo "building kustomize $KUSTOMIZE_VERSION into $bin" >&2
  # -ldflags sets the version `kustomize version` prints, which go install from the module proxy
  # leaves as "(devel)"
  GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN="$bin" go install \
    -ldflags "-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$KUSTOMIZE_VERSION" \
    "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  built || { echo "kustomize in $bin was not built from $KUSTOMIZE_VERSION" >&2; exit 1; }
fi
echo "$bin"
