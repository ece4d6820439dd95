#!/bin/sh
# Builds the peers the benchmarks of this directory measure against, from their public sources:
# kpt (main) and three functions of kptdev/krm-functions-catalog (set-namespace, set-labels,
# set-annotations), into $KRM_CATALOG_BENCH_PEERS (default: ~/.cache/krm-catalog-bench).
#
#   e2e/bench/build-peers.sh [kpt-source-dir] [functions-catalog-source-dir]
#
# Without source directories it clones the two repositories with git. The builds are throwaway:
# nothing here touches this repository's go.mod.
set -eu
out=${KRM_CATALOG_BENCH_PEERS:-$HOME/.cache/krm-catalog-bench}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kpt=${1:-}
cat=${2:-}
if [ -z "$kpt" ]; then
	kpt=$work/kpt
	git clone --depth 1 https://github.com/kptdev/kpt "$kpt"
fi
if [ -z "$cat" ]; then
	cat=$work/krm-functions-catalog
	git clone --depth 1 https://github.com/kptdev/krm-functions-catalog "$cat"
fi
export CGO_ENABLED=0
(cd "$kpt" && go build -trimpath -o "$out/kpt" .)
for f in set-namespace set-labels set-annotations; do
	cp -R "$cat/functions/go/$f" "$work/$f"
	if ! (cd "$work/$f" && go build -trimpath -o "$out/$f" .); then
		# set-labels asks for a version of the SDK under its old module path
		# (GoogleContainerTools/kpt-functions-sdk) that the module proxy does not serve; the same
		# SDK is published as kptdev/krm-functions-sdk: build this copy against it
		echo "building $f against github.com/kptdev/krm-functions-sdk/go/fn v1.0.2" >&2
		(
			cd "$work/$f"
			grep -rl GoogleContainerTools/kpt-functions-sdk/go/fn --include='*.go' . |
				xargs sed -i 's#github.com/GoogleContainerTools/kpt-functions-sdk/go/fn#github.com/kptdev/krm-functions-sdk/go/fn#g'
			go mod edit -droprequire github.com/GoogleContainerTools/kpt-functions-sdk/go/fn \
				-droprequire github.com/GoogleContainerTools/kpt-functions-sdk/go/api \
				-require github.com/kptdev/krm-functions-sdk/go/fn@v1.0.2
			GOFLAGS=-mod=mod go build -trimpath -o "$out/$f" .
		)
	fi
done
# what was built, for the figures' record
{
	echo "kpt $(git -C "$kpt" rev-parse HEAD 2>/dev/null || echo unknown)"
	echo "krm-functions-catalog $(git -C "$cat" rev-parse HEAD 2>/dev/null || echo unknown)"
} >"$out/VERSIONS"
ls -l "$out"
