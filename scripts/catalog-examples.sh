#!/usr/bin/env bash
# Runs the examples/ of kptdev/krm-functions-catalog through krm-catalog, the way kpt's own e2e
# runs them, and compares each with its .expected/diff.patch. It needs what CI does not have:
#
#   KFC   a checkout of kptdev/krm-functions-catalog (functions/go and examples/)
#   SDK   a git directory of kptdev/krm-functions-sdk: the module proxy refuses some of the
#         pseudo-versions the functions pin, and those commits are taken from here by a `replace`
#         in a throwaway copy of each function (never in this repository's go.mod)
#
#   scripts/catalog-examples.sh            build the functions, run every example, print a table
#   ONLY=set-labels-simple scripts/...     run one example (every run keeps its work directory,
#                                          $WORK/run/NAME: got/, want/, out, diff)
#   KRM_CATALOG=/tmp/old scripts/...       measure another krm-catalog build
#
# Every Go function is built as a native executable; a trusted catalog lists each function's image
# with an exec runtime pinned to that executable's sha256, and the executable is placed in the exec
# cache under that digest, so `--runtime exec` runs it with nothing fetched. Declarative examples
# (a Kptfile pipeline) run `fn render`; `testType: eval` ones, and the `kpt fn eval` lines of an
# `.expected/exec.sh`, run `fn run` with the config `kpt fn eval` builds. An example needing the
# network, a container mount (its files at a path inside the container), a TypeScript function,
# or marked `skip` is reported as such and not counted. Needs bash, git, go and jq.
set -euo pipefail

KFC=${KFC:?set KFC to a checkout of kptdev/krm-functions-catalog}
SDK=${SDK:?set SDK to a git directory of kptdev/krm-functions-sdk}
WORK=${WORK:-/tmp/catalog-examples}
REPO=$(cd "$(dirname "$0")/.." && pwd)
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0

mkdir -p "$WORK/bin" "$WORK/src" "$WORK/sdk" "$WORK/cache/exec"
# KRM_CATALOG names another build to measure (an older commit's, for a before-and-after figure)
if [ -n "${KRM_CATALOG:-}" ]; then
	cp "$KRM_CATALOG" "$WORK/krm-catalog"
else
	(cd "$REPO" && go build -o "$WORK/krm-catalog" ./cmd/krm-catalog)
fi

# the registry and path the examples name the catalog's images under (kpt's e2e adds it to a bare
# name); read from the examples, not written here
PREFIX=$(grep -rhoE 'image: [^ ]+/[a-z0-9-]+:unstable' "$KFC"/examples/*/Kptfile "$KFC"/examples/*/.expected/config.yaml | head -1 | sed -E 's/^image: //; s|/[a-z0-9-]+:unstable$||')
image_ref() { case $1 in */*) echo "$1" ;; *) echo "$PREFIX/$1" ;; esac; }

# sdk_at COMMIT: a checkout of the SDK at COMMIT (12 hex digits of a pseudo-version)
sdk_at() {
	local c=$1 d="$WORK/sdk/$1"
	if [ ! -d "$d" ]; then
		mkdir -p "$d"
		git --git-dir="$SDK" archive --prefix=go/ "$c:go" | tar -x -C "$d"
	fi
	echo "$d"
}

build() {
	local name=$1 dst="$WORK/src/$1"
	[ -x "$WORK/bin/$name" ] && return 0
	# the whole tree, once: some functions replace others by relative path (../list-setters)
	[ -d "$WORK/src/.copied" ] || { cp -r "$KFC/functions/go/." "$WORK/src/" && mkdir "$WORK/src/.copied"; }
	# every kpt-functions-sdk pseudo-version the module pins is taken from the SDK's history
	grep -Eo 'github.com/GoogleContainerTools/kpt-functions-sdk/go/(fn|api) v0\.0\.0-[0-9]+-[0-9a-f]{12}' "$dst/go.mod" | sort -u |
		while read -r mod ver; do
			local sub=${mod##*/} commit=${ver##*-}
			(cd "$dst" && go mod edit -replace "$mod=$(sdk_at "$commit")/go/$sub")
		done
	(cd "$dst" && go build -o "$WORK/bin/$name" .) >"$WORK/bin/$name.log" 2>&1 || { echo "build $name failed: $WORK/bin/$name.log" >&2; return 1; }
}

# the catalog: one function per built executable, listed by its image, exec pinned by digest
catalog="$WORK/catalog.yaml"
{
	echo "apiVersion: config.kubernetes.io/v1alpha1"
	echo "kind: KRMFunctionCatalog"
	echo "metadata: {name: krm-functions-catalog-local}"
	echo "spec:"
	echo "  krmFunctions:"
} >"$catalog"
for d in "$KFC"/functions/go/*/; do
	name=$(basename "$d")
	[ -f "$d/go.mod" ] && [ "$name" != _template ] || continue
	build "$name" || continue
	sum=$(sha256sum "$WORK/bin/$name" | cut -d' ' -f1)
	mkdir -p "$WORK/cache/exec/$sum" && cp "$WORK/bin/$name" "$WORK/cache/exec/$sum/$name"
	kind=$(echo "$name" | sed -E 's/(^|-)([a-z])/\U\2/g')
	cat >>"$catalog" <<EOT
    - group: fn.kpt.dev
      names: {kind: $kind}
      description: $name from kptdev/krm-functions-catalog, built from source.
      publisher: kpt.dev
      versions:
        - name: v1
          runtime:
            container: {image: "$PREFIX/$name:unstable"}
            exec:
              platforms:
                - {bin: $name, os: linux, arch: amd64, uri: "https://unused.invalid/$name", sha256: $sum}
EOT
done

# compare DIR: the example's package after the run against the original with diff.patch applied
run_example() {
	local ex=$1 src="$KFC/examples/$1" w="$WORK/run/$1"
	rm -rf "$w" && mkdir -p "$w"
	cp -r "$src" "$w/got" && cp -r "$src" "$w/want"
	rm -rf "$w/want/.expected"
	[ -f "$src/.expected/exec.sh" ] || rm -rf "$w/got/.expected"
	if [ -s "$src/.expected/diff.patch" ]; then
		(cd "$w/want" && git apply --whitespace=nowarn "$src/.expected/diff.patch") || { echo "patch-fails"; return; }
	fi
	local cfg="$src/.expected/config.yaml" code=0 expcode=0
	[ -f "$cfg" ] && expcode=$(sed -n 's/^exitCode: *//p' "$cfg")
	expcode=${expcode:-0}
	local flags=(--runtime exec --catalog "$catalog" --trusted-catalog "$catalog" --cache-dir "$WORK/cache" --allow-exec)
	if [ -f "$cfg" ] && grep -q '^testType: eval' "$cfg"; then
		# kpt fn eval --image IMAGE [--fn-config FILE] -- k=v...: the config is FILE, or a ConfigMap
		# of the arguments; the image goes in KEP-2299's runtime field, which the function never sees
		local image fnconfig
		image=$(image_ref "$(sed -n 's/^image: *//p' "$cfg")")
		fnconfig=$(sed -n 's/^fnConfig: *//p' "$cfg")
		if [ -n "$fnconfig" ]; then
			cp "$src/.expected/$fnconfig" "$w/fnconfig.yaml"
		else
			printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n' >"$w/fnconfig.yaml"
			awk '/^args:/{a=1;next} a&&/^  /{print;next} {a=0}' "$cfg" >>"$w/fnconfig.yaml"
		fi
		printf 'runtime:\n  container:\n    image: %s\n' "$image" >>"$w/fnconfig.yaml"
		(cd "$w/got" && "$WORK/krm-catalog" fn run . --fn-config "$w/fnconfig.yaml" "${flags[@]}") >"$w/out" 2>&1 || code=$?
	elif [ -f "$src/.expected/exec.sh" ]; then
		# an imperative example: its exec.sh, with kpt fn eval --image IMAGE -- k=v... as fn run
		# (a ConfigMap of the arguments; --image-pull-policy and the like are kpt's own)
		(cd "$w/got" && KC="$WORK/krm-catalog" CFG="$w/fnconfig.yaml" PREFIX="$PREFIX" bash -c '
			kpt() {
				[ "$1 $2" = "fn eval" ] || { echo "not kpt fn eval: $*" >&2; return 2; }
				shift 2
				local image="" dir=.
				while [ $# -gt 0 ] && [ "$1" != -- ]; do
					case $1 in
					--image) image=$2; shift ;;
					--image=*) image=${1#--image=} ;;
					--image-pull-policy | --results-dir) shift ;;
					--network) echo "needs the network" >&2; return 3 ;;
					--mount | --mount=*) echo "needs a container mount" >&2; return 3 ;;
					-*) ;;
					*) dir=$1 ;;
					esac
					shift
				done
				[ "${1:-}" = -- ] && shift
				case $image in */*) ;; *) image=$PREFIX/$image ;; esac
				{
					printf "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\nruntime:\n  container:\n    image: %s\ndata:\n" "$image"
					for kv in "$@"; do printf "  %s: %s\n" "${kv%%=*}" "$(jq -Rn --arg v "${kv#*=}" "\$v")"; done
				} >"$CFG"
				"$KC" fn run "$dir" --fn-config "$CFG" '"${flags[*]}"'
			}
			source .expected/exec.sh' ) >"$w/out" 2>&1 || code=$?
		rm -rf "$w/got/.expected"
	else
		(cd "$w/got" && "$WORK/krm-catalog" fn render . "${flags[@]}") >"$w/out" 2>&1 || code=$?
	fi
	if grep -q '^not kpt fn eval: pkg init' "$w/out"; then echo "differs: its exec.sh runs kpt pkg init, which krm-catalog has not"; return; fi
	if [ "$code" != "$expcode" ]; then echo "exit-$code-want-$expcode"; return; fi
	# Kptfile status is kpt 1.0's (a separate comparison); everything else byte for byte
	if same "$w/want" "$w/got" >"$w/diff"; then
		echo "match"
		return
	fi
	# kpt's render writes its usage annotation on Config Connector resources; before kpt
	# v1.0.0-beta.59 its value was kpt-fn, since then krm-fn. An expectation recorded with the older
	# kpt is compared again with the value kpt writes today, and reported apart
	local old="cnrm.cloud.google.com/blueprint: 'kpt-fn'" new="cnrm.cloud.google.com/blueprint: 'krm-fn'"
	if grep -rqF "$old" "$w/want"; then
		cp -r "$w/want" "$w/want-kpt-today"
		grep -rlF "$old" "$w/want-kpt-today" | while read -r f; do sed -i "s|$old|$new|" "$f"; done
		if same "$w/want-kpt-today" "$w/got" >/dev/null; then
			echo "differs only by kpt's older attribution value (kpt-fn; krm-fn since v1.0.0-beta.59)"
			return
		fi
	fi
	echo "differs"
}

# same WANT GOT: the two packages are byte for byte the same, the Kptfiles' status aside
same() {
	diff -r -x Kptfile "$1" "$2" && diff <(sed '/^status:/,$d' "$1/Kptfile" 2>/dev/null) <(sed '/^status:/,$d' "$2/Kptfile" 2>/dev/null)
}

printf '%-50s %s\n' example result
for src in "$KFC"/examples/*/; do
	ex=$(basename "$src")
	[ -n "${ONLY:-}" ] && [ "$ex" != "$ONLY" ] && continue
	cfg="$src/.expected/config.yaml"
	if [ "$ex" = _template ]; then continue; fi
	if [ -f "$cfg" ] && grep -Eq '^skip: *true' "$cfg"; then printf '%-50s %s\n' "$ex" "skipped (marked skip)"; continue; fi
	if [ -f "$cfg" ] && grep -Eq '^network: *true' "$cfg" || grep -qs -- '--network' "$src/.expected/exec.sh"; then
		printf '%-50s %s\n' "$ex" "skipped (network)"
		continue
	fi
	if grep -qs -- '--mount' "$src/.expected/exec.sh"; then printf '%-50s %s\n' "$ex" "skipped (a container mount)"; continue; fi
	ts=""
	for t in "$KFC"/functions/ts/*/; do
		t=$(basename "$t")
		grep -Eqs "(/|image: *)$t:" "$src/Kptfile" "$cfg" "$src/.expected/exec.sh" && ts=$t
	done
	if [ -n "$ts" ]; then printf '%-50s %s\n' "$ex" "skipped (TypeScript function $ts)"; continue; fi
	printf '%-50s %s\n' "$ex" "$(run_example "$ex")"
done
