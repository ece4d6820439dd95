#!/usr/bin/env bash
# Rebuilds the patched module copies under third_party/ (third_party/README.md says why each exists)
# from the module proxy: the module at the version go.mod requires, without its tests and test data,
# with third_party/<dir>.patch applied, formatted by gofmt. With --check, compares instead and fails on any difference;
# after raising a version in go.mod, run it without --check and review the result.
#
#   scripts/third-party.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GOTOOLCHAIN=local

check=false
[ "${1:-}" = --check ] && check=true
status=0

# module DIR MODULE: third_party/DIR is MODULE, at the version go.mod requires, patched.
module() {
  local dir=$1 mod=$2 version src tmp
  version=$(go list -m -f '{{.Version}}' "$mod")
  src=$(go mod download -json "$mod@$version" | jq -r .Dir)
  tmp=$(mktemp -d)
  cp -R "$src/." "$tmp/"
  chmod -R u+w "$tmp"
  find "$tmp" -name '*_test.go' -delete
  find "$tmp" -type d -name testdata -prune -exec rm -rf {} +
  find "$tmp" -maxdepth 1 -name '.*' ! -name . -exec rm -rf {} +
  (cd "$tmp" && git apply "$root/third_party/$dir.patch")
  # formatted by this Go's gofmt, so that every Go file of the repository is (upstream's were
  # formatted by an older one: doc comment layout); a few passes, as gofmt reindents some
  # comments again on a second one
  for _ in 1 2 3; do
    [ -z "$(gofmt -l "$tmp")" ] && break
    gofmt -w "$tmp"
  done
  if $check; then
    if ! diff -r "$tmp" "third_party/$dir" >&2; then
      echo "third_party/$dir differs from $mod@$version with third_party/$dir.patch" >&2
      status=1
    fi
    rm -rf "$tmp"
  else
    rm -rf "third_party/$dir"
    mv "$tmp" "third_party/$dir"
    echo "third_party/$dir: $mod@$version, patched"
  fi
}

module jsonschema github.com/santhosh-tekuri/jsonschema/v5
module kustomize-api sigs.k8s.io/kustomize/api
module yaml go.yaml.in/yaml/v3
module semver github.com/Masterminds/semver/v3
module oras-go oras.land/oras-go/v2
module go-digest github.com/opencontainers/go-digest
module client_golang github.com/prometheus/client_golang
module procfs github.com/prometheus/procfs
exit $status
