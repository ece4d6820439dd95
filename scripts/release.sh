#!/usr/bin/env bash
# Builds a release of krm-catalog into dist/VERSION (or $RELEASE_DIST/VERSION): static binaries,
# their SBOMs, the container image of each linux binary, the Helm chart with that image as its
# default, and SHA256SUMS of them all. Built twice from the same tree with the same Go, the bytes
# are the same (docs/releasing.md). Publishing them is not done here.
#
#   scripts/release.sh v0.2.0
#
# RELEASE_PLATFORMS    OS/ARCH list (default: linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
# RELEASE_REPOSITORY   the image repository the chart defaults to (default: krm-catalog)
# RELEASE_DIST         where VERSION's directory goes (default: dist)
# SOURCE_DATE_EPOCH    the time in the image, chart and SBOMs (default: the last commit's, else 0)
# HELM                 a helm to check the chart with (default: built by .ci/tools.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:-}"
if ! [[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: scripts/release.sh VERSION (a semantic version with a v: v0.2.0, v1.0.0-rc.1)" >&2
  exit 2
fi
platforms="${RELEASE_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"
repository="${RELEASE_REPOSITORY:-krm-catalog}"
dist="${RELEASE_DIST:-dist}/$version"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || echo 0)
fi

export GOTOOLCHAIN=local CGO_ENABLED=0
# no VCS stamp (it says whether the tree is dirty) and no build ID: the bytes depend on the sources
# and the toolchain only
export GOFLAGS="-buildvcs=false -trimpath"
ldflags="-s -w -buildid= -X github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd.version=$version"

rm -rf "$dist"
mkdir -p "$dist"
tool="$(mktemp -d)/release"
trap 'rm -rf "$(dirname "$tool")"' EXIT
GOOS= GOARCH= go build -o "$tool" ./scripts/release

for p in $platforms; do
  os="${p%/*}" arch="${p#*/}"
  bin="$dist/krm-catalog_${version}_${os}_${arch}"
  echo "== $p" >&2
  GOOS="$os" GOARCH="$arch" go build -ldflags "$ldflags" -o "$bin" ./cmd/krm-catalog
  "$tool" sbom -binary "$bin" -version "$version" -epoch "$SOURCE_DATE_EPOCH" -o "$bin.spdx.json"
  if [ "$os" = linux ]; then
    "$tool" image -binary "$bin" -platform "$p" -repository "$repository" -version "$version" \
      -epoch "$SOURCE_DATE_EPOCH" -o "$dist/krm-catalog_${version}_image_${os}_${arch}.tar"
  fi
done

chart="$dist/krm-catalog-${version#v}.tgz"
"$tool" chart -dir deploy/helm/krm-catalog -repository "$repository" -version "$version" \
  -epoch "$SOURCE_DATE_EPOCH" -o "$chart"
helm="${HELM:-}"
if [ -z "$helm" ]; then
  helm="$(.ci/tools.sh helm)/helm"
fi
# the packaged chart lints clean with the values a user must give
HELM_CACHE_HOME="$(dirname "$tool")/helm" HELM_CONFIG_HOME="$(dirname "$tool")/helm" HELM_DATA_HOME="$(dirname "$tool")/helm" \
  "$helm" lint --strict --kube-version v1.31.0 "$chart" --set database.url=postgres://db/krm_catalog >&2

(cd "$dist" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
echo "$dist"
