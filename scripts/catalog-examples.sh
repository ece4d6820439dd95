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
#   SERVE=1 scripts/...                    run every function through `krm-catalog fn serve`: a
#                                          server over the catalog below, and fn render and fn run
#                                          over a second catalog whose exec runtimes are
#                                          `krm-catalog fn proxy --evaluator` to it, so each call goes
#                                          over gRPC to the server, which runs the executable
#                                          ($WORK/fn-serve.log holds its log)
#   KPT=/tmp/kpt scripts/...               run every example through that kpt binary too, as the
#                                          catalog's e2e harness does (docker, images built here;
#                                          $WORK/run/NAME/kpt/NAME, kpt.out, kpt.diff, both.diff),
#                                          and print a markdown table of three columns: krm-catalog
#                                          against the expectation, kpt against it, the two against
#                                          each other
#
# Every Go function is built as a native executable; a trusted catalog lists each function's image
# with an exec runtime pinned to that executable's sha256, and the executable is placed in the exec
# cache under that digest, so `--runtime exec` runs it with nothing fetched. Declarative examples
# (a Kptfile pipeline) run `fn render`; `testType: eval` ones, and the `kpt fn eval` lines of an
# `.expected/exec.sh`, run `fn run` with the config `kpt fn eval` builds. An example needing the
# network, a container mount (its files at a path inside the container), a TypeScript function,
# or marked `skip` is reported as such and not counted. Needs bash, git, go and jq (and docker
# for KPT: kpt runs each function's image, here FROM scratch around the same executable, tagged
# under the name the example uses, never pulled).
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
	# the clone's go.work, where -mod=mod is refused
	(cd "$REPO" && GOFLAGS= go build -o "$WORK/krm-catalog" ./cmd/krm-catalog)
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

CACHE=$WORK/cache
if [ -n "${SERVE:-}" ]; then
	# the server runs the catalog's executables; what fn render and fn run resolve each image to is
	# a wrapper that hands the call to it (fn proxy: the list to the server, its answer back)
	"$WORK/krm-catalog" fn serve --addr 127.0.0.1:0 --log-format json --runtime exec --catalog "$catalog" \
		--trusted-catalog "$catalog" --cache-dir "$WORK/cache" 2>"$WORK/fn-serve.log" &
	serve_pid=$!
	trap 'kill $serve_pid 2>/dev/null' EXIT
	for _ in $(seq 1 600); do grep -q '"serving evaluator' "$WORK/fn-serve.log" && break; sleep 0.1; done
	addr=$(sed -n 's/.*"msg":"serving evaluator[^"]*","addr":"\([^"]*\)".*/\1/p' "$WORK/fn-serve.log")
	[ -n "$addr" ] || { echo "fn serve did not start: $WORK/fn-serve.log" >&2; exit 1; }
	CACHE=$WORK/proxy-cache
	rm -rf "$CACHE" "$WORK/proxy" && mkdir -p "$CACHE/exec" "$WORK/proxy"
	awk -v dir="$WORK/proxy" -v krm="$WORK/krm-catalog" -v addr="$addr" -v cache="$CACHE" '
		/container: \{image:/ { match($0, /image: "[^"]+"/); image = substr($0, RSTART + 8, RLENGTH - 9) }
		/- \{bin: / {
			match($0, /bin: [^,]+/); bin = substr($0, RSTART + 5, RLENGTH - 5)
			f = dir "/" bin
			printf "#!/bin/sh\nexec %s fn proxy --evaluator %s --image %s\n", krm, addr, image > f
			close(f)
			cmd = "chmod +x " f " && sha256sum " f; cmd | getline line; close(cmd); split(line, a, " ")
			system("mkdir -p " cache "/exec/" a[1] " && cp " f " " cache "/exec/" a[1] "/" bin)
			sub(/sha256: [0-9a-f]+/, "sha256: " a[1])
		}
		{ print }' "$catalog" >"$WORK/proxy-catalog.yaml"
	catalog=$WORK/proxy-catalog.yaml
fi

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
	local flags=(--runtime exec --catalog "$catalog" --trusted-catalog "$catalog" --cache-dir "$CACHE" --allow-exec)
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
	verdict "$w/want" "$w/got" "$code" "$expcode" 2>"$w/diff"
}

# verdict WANT GOT CODE WANTCODE: match, or how GOT differs from WANT (the diff on stderr)
verdict() {
	local want=$1 got=$2
	if [ "$3" != "$4" ]; then echo "exit-$3-want-$4"; return; fi
	# Kptfile status is kpt 1.0's (a separate comparison); everything else byte for byte
	if same "$want" "$got" >&2; then
		echo "match"
		return
	fi
	# kpt's render writes its usage annotation on Config Connector resources; before kpt
	# v1.0.0-beta.59 its value was kpt-fn, since then krm-fn. An expectation recorded with the older
	# kpt is compared again with the value kpt writes today, and reported apart
	local old="cnrm.cloud.google.com/blueprint: 'kpt-fn'" new="cnrm.cloud.google.com/blueprint: 'krm-fn'"
	if grep -rqF "$old" "$want"; then
		rm -rf "$want-kpt-today" && cp -r "$want" "$want-kpt-today"
		grep -rlF "$old" "$want-kpt-today" | while read -r f; do sed -i "s|$old|$new|" "$f"; done
		if same "$want-kpt-today" "$got" >/dev/null 2>&1; then
			echo "differs only by kpt's older attribution value (kpt-fn; krm-fn since v1.0.0-beta.59)"
			return
		fi
	fi
	echo "differs"
}

# kpt_images: every function image the examples name, built FROM scratch around the executable
# built above (with the nobody user kpt's container runtime runs as, and the /tmp the catalog's
# base image has) and tagged locally under that name, so kpt runs the very binaries krm-catalog runs
kpt_images() {
	local ref name ctx
	grep -rhoE --include=Kptfile --include=config.yaml --include=exec.sh '(image:|--image[= ]|-i) *[^ ]+:[^ ]+' "$KFC/examples" |
		sed -E 's/^(image:|--image[= ]|-i) *//' | sort -u | while read -r ref; do
		name=${ref##*/} && name=${name%%:*}
		[ -x "$WORK/bin/$name" ] || continue
		ctx=$WORK/image/$name
		if [ ! -d "$ctx" ]; then
			mkdir -p "$ctx/tmp" && chmod 1777 "$ctx/tmp"
			cp "$WORK/bin/$name" "$ctx/function"
			echo 'nobody:x:65534:65534:nobody:/:/sbin/nologin' >"$ctx/passwd"
			echo 'nobody:x:65534:' >"$ctx/group"
			printf '%s\n' 'FROM scratch' 'COPY passwd group /etc/' 'COPY tmp /tmp' \
				'COPY function /usr/local/bin/function' 'ENTRYPOINT ["/usr/local/bin/function"]' >"$ctx/Dockerfile"
			docker build -t "krm-catalog-examples/$name:built" "$ctx" >"$ctx/build.log" 2>&1 ||
				{ echo "image $name failed: $ctx/build.log" >&2; rm -rf "$ctx"; continue; }
		fi
		docker tag "krm-catalog-examples/$name:built" "$(image_ref "$ref")" && image_ref "$ref" >>"$WORK/image/tags"
	done
}

# run_kpt EX: the example through the kpt at $KPT as the catalog's e2e harness runs it (kpt's
# pkg/test/runner: the package with its .expected copied, exec.sh run with kpt on the PATH, else
# kpt fn render, or kpt fn eval for testType eval; images never pulled), compared as run_example does
run_kpt() {
	local ex=$1 src="$KFC/examples/$1" w="$WORK/run/$1" cfg="$KFC/examples/$1/.expected/config.yaml" code=0 expcode=0
	# under the example's name, as the harness has it (kpt names the package after its directory)
	local pkg="$w/kpt/$ex"
	rm -rf "$w/kpt" && mkdir "$w/kpt" && cp -r "$src" "$pkg"
	[ -f "$cfg" ] && expcode=$(sed -n 's/^exitCode: *//p' "$cfg")
	expcode=${expcode:-0}
	local cmd=("$KPT" fn render "$pkg" --image-pull-policy never)
	if [ -f "$src/.expected/exec.sh" ]; then
		cmd=(bash "$src/.expected/exec.sh")
	elif [ -f "$cfg" ] && grep -q '^testType: eval' "$cfg"; then
		local fnconfig
		cmd=("$KPT" fn eval "$pkg" --image-pull-policy never --image "$(sed -n 's/^image: *//p' "$cfg")")
		fnconfig=$(sed -n 's/^fnConfig: *//p' "$cfg")
		[ -z "$fnconfig" ] || cmd+=(--fn-config "$src/.expected/$fnconfig")
		if grep -q '^args:' "$cfg"; then
			cmd+=(--)
			while read -r kv; do cmd+=("$kv"); done < <(awk '/^args:/{a=1;next} a&&/^  /{print;next} {a=0}' "$cfg" |
				sed -E "s/^ +([^:]+): *(.*)$/\1=\2/; s/='(.*)'$/=\1/; s/=\"(.*)\"$/=\1/")
		fi
	fi
	# bare image names get the prefix the examples use (kpt's own default prefix is another)
	(cd "$pkg" && PATH="$WORK/kpt-bin:$PATH" KPT_IMAGE_PREFIX=$PREFIX "${cmd[@]}") >"$w/kpt.out" 2>&1 || code=$?
	rm -rf "$pkg/.expected"
	verdict "$w/want" "$pkg" "$code" "$expcode" 2>"$w/kpt.diff"
}

# same WANT GOT: the two packages are byte for byte the same, the Kptfiles' status aside
same() {
	diff -r -x Kptfile "$1" "$2" && diff <(sed '/^status:/,$d' "$1/Kptfile" 2>/dev/null) <(sed '/^status:/,$d' "$2/Kptfile" 2>/dev/null)
}

if [ -n "${KPT:-}" ]; then
	mkdir -p "$WORK/kpt-bin" "$WORK/image" && ln -sf "$(realpath "$KPT")" "$WORK/kpt-bin/kpt"
	# the tags name public images: they are taken away again, so nothing else on this engine
	# runs these builds under those names
	untag() { [ -f "$WORK/image/tags" ] && sort -u "$WORK/image/tags" | xargs -r docker rmi >/dev/null 2>&1; rm -f "$WORK/image/tags"; }
	trap 'untag; [ -z "${serve_pid:-}" ] || kill "$serve_pid" 2>/dev/null' EXIT
	kpt_images
	echo "| example | krm-catalog | kpt $("$KPT" version 2>/dev/null | sed -n "s/^Version: //p") | krm-catalog and kpt |"
	echo "| --- | --- | --- | --- |"
fi
# row EX RESULT...: a line of the table (a markdown row with kpt's column)
row() {
	if [ -n "${KPT:-}" ]; then
		local ex=$1 && shift
		printf '| %s |' "$ex" && printf ' %s |' "$@" && echo
	else
		printf '%-50s %s\n' "$1" "$2"
	fi
}
[ -n "${KPT:-}" ] || row example result
for src in "$KFC"/examples/*/; do
	ex=$(basename "$src")
	[ -n "${ONLY:-}" ] && [ "$ex" != "$ONLY" ] && continue
	cfg="$src/.expected/config.yaml"
	if [ "$ex" = _template ]; then continue; fi
	if [ -f "$cfg" ] && grep -Eq '^skip: *true' "$cfg"; then row "$ex" "skipped (marked skip)"; continue; fi
	if [ -f "$cfg" ] && grep -Eq '^network: *true' "$cfg" || grep -qs -- '--network' "$src/.expected/exec.sh"; then
		row "$ex" "skipped (network)"
		continue
	fi
	if grep -qs -- '--mount' "$src/.expected/exec.sh"; then row "$ex" "skipped (a container mount)"; continue; fi
	ts=""
	for t in "$KFC"/functions/ts/*/; do
		t=$(basename "$t")
		grep -Eqs "(/|image: *)$t:" "$src/Kptfile" "$cfg" "$src/.expected/exec.sh" && ts=$t
	done
	if [ -n "$ts" ]; then row "$ex" "skipped (TypeScript function $ts)"; continue; fi
	if [ -z "${KPT:-}" ]; then
		row "$ex" "$(run_example "$ex")"
		continue
	fi
	ours=$(run_example "$ex") theirs=$(run_kpt "$ex") both=-
	# the third column: krm-catalog's package against kpt's, by the same rule (kpt pkg init aside)
	if [ "${ours#differs: its exec.sh}" = "$ours" ]; then
		both=same && same "$WORK/run/$ex/kpt/$ex" "$WORK/run/$ex/got" >"$WORK/run/$ex/both.diff" 2>&1 || both=differ
	fi
	row "$ex" "$ours" "$theirs" "$both"
done
