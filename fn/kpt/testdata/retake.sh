#!/bin/sh
# retake.sh GITDIR: copies kpt's e2e/testdata/fn-render cases, at GITDIR's HEAD (a kptdev/kpt
# clone or bare mirror), into fn-render/ as they are, each case's .expected/ included, with
# one change: registry hosts are renamed example.com. The commit taken is written to
# fn-render/COMMIT.
set -eu
git_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
dest=$here/fn-render
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git --git-dir="$git_dir" archive HEAD e2e/testdata/fn-render | tar -x -C "$tmp"
rm -rf "$dest"
mv "$tmp/e2e/testdata/fn-render" "$dest"
git --git-dir="$git_dir" rev-parse HEAD >"$dest/COMMIT"
grep -rlE 'ghcr\.io|gcr\.io|docker\.io' "$dest" | while read -r f; do
	sed -i -E 's#(ghcr|gcr|docker)\.io/#example.com/#g' "$f"
done
