#!/usr/bin/env bash
# go mod tidy for the CLI's module. go.mod requires pkg/krmfn (a module of its own) at a version
# that is this tree's copy in go.work; go mod tidy reads no go.work, so it is given the same
# replacement for the run, and go.mod keeps none (`go install MODULE@VERSION` refuses them).
set -euo pipefail
cd "$(dirname "$0")/.."
m=github.com/krm-catalog/krm-catalog/pkg/krmfn
export GOWORK=off
go mod edit -replace "$m=./pkg/krmfn"
trap 'go mod edit -dropreplace "$m"' EXIT
go mod tidy "$@"
