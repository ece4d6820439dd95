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

have_version() { # $1 binary, $2 expected version text
  [ -x "$1" ] && "$1" version 2>/dev/null | grep -q -- "$2"
}

if have_version "$bin/kustomize" "$KUSTOMIZE_VERSION"; then
  echo "kustomize $KUSTOMIZE_VERSION already in $bin" >&2
else
  echo "building kustomize $KUSTOMIZE_VERSION into $bin" >&2
  # -ldflags sets the version kustomize reports, which the check above relies on; go install from
  # the module proxy leaves it "(devel)" otherwise.
  GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$bin" go install \
    -ldflags "-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$KUSTOMIZE_VERSION" \
    "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  have_version "$bin/kustomize" "$KUSTOMIZE_VERSION" || {
    echo "kustomize in $bin does not report $KUSTOMIZE_VERSION:" >&2
    "$bin/kustomize" version >&2 || true
    exit 1
  }
fi
echo "$bin"
