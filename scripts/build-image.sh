#!/usr/bin/env bash
# Builds the krm-catalog image from a static binary: no base image is pulled.
# Usage: scripts/build-image.sh [TAG]   (default krm-catalog:dev)
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-krm-catalog:dev}"
mkdir -p dist
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o dist/krm-catalog ./cmd/krm-catalog
cp /etc/ssl/certs/ca-certificates.crt dist/ca-certificates.crt
docker build -q -t "$tag" .
echo "$tag"
