#!/usr/bin/env bash
# Regenerates the Go code of the evaluator API from fn/evaluator/evaluatorpb/evaluator.proto with the
# standard plugins: protoc (Debian's protobuf-compiler), protoc-gen-go at the google.golang.org/protobuf
# version go.mod requires, and protoc-gen-go-grpc v1.6.0. The generated files are committed; run
# this after changing the .proto.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || { echo "protoc is missing: apt-get install protobuf-compiler" >&2; exit 2; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
protobuf=$(go list -m -f '{{.Version}}' google.golang.org/protobuf)
GOBIN=$bin go install "google.golang.org/protobuf/cmd/protoc-gen-go@$protobuf"
GOBIN=$bin go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
cd fn/evaluator/evaluatorpb
PATH=$bin:$PATH protoc --go_out=. --go_opt=paths=source_relative \
  --go-grpc_out=. --go-grpc_opt=paths=source_relative evaluator.proto
