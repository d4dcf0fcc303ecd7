#!/usr/bin/env bash
# build.sh builds every plugin in plugins/ into a directory (default
# plugins/build/): the Go ones with the standard toolchain as WASI reactors,
# the AssemblyScript ones (a package.json and an asconfig.json) with their
# pinned asc, after npm ci when node_modules is missing, and the
# hand-written WAT one by copying its committed plugin.wasm.
#
#   plugins/build.sh [OUT_DIR]
#
# Each plugin lands as OUT_DIR/<name>.wasm, <name> being its folder.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/build}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

built=0
for dir in "$here"/*/; do
	name="$(basename "$dir")"
	case "$name" in build | internal) continue ;; esac
	if ls "$dir"*.go >/dev/null 2>&1 && grep -qs '^package main$' "$dir"*.go; then
		(cd "$dir" && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags=-s -o "$out/$name.wasm" .)
	elif [[ -f "$dir/package.json" && -f "$dir/asconfig.json" ]]; then
		if ! command -v npm >/dev/null; then
			echo "skipping $name: it is written in AssemblyScript and needs Node.js 20 and npm" >&2
			continue
		fi
		[[ -d "$dir/node_modules" ]] || (cd "$dir" && npm ci --no-audit --no-fund)
		(cd "$dir" && node_modules/.bin/asc --config asconfig.json --outFile "$out/$name.wasm")
	elif [[ -f "$dir/plugin.wasm" ]]; then
		cp "$dir/plugin.wasm" "$out/$name.wasm"
	else
		continue
	fi
	echo "built $out/$name.wasm ($(wc -c <"$out/$name.wasm") bytes)"
	built=$((built + 1))
done
echo "$built plugins in $out"
