#!/usr/bin/env bash
# Lay out and pack tinycode's npm packages: the launcher @tinycode/acp (bin `tinycode`, which starts the native
# binary) and one @tinycode/acp-<os>-<cpu> package per binary, all stamped with VERSION. Writes the `npm pack`
# tarballs to OUT and prints their paths. Needs npm; downloads nothing.
#
#   packaging/npm/stage.sh VERSION OUT [BINARY TARGET]...
#   e.g. packaging/npm/stage.sh 0.1.0 dist/npm target/x86_64-unknown-linux-gnu/release/tinycode x86_64-unknown-linux-gnu
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${1:?usage: stage.sh VERSION OUT [BINARY TARGET]...}"
out="${2:?usage: stage.sh VERSION OUT [BINARY TARGET]...}"
shift 2
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The npm os/cpu of a Rust target triple.
platform_of() {
  case "$1" in
    x86_64-unknown-linux-gnu | x86_64-unknown-linux-musl) echo "linux x64" ;;
    aarch64-unknown-linux-gnu | aarch64-unknown-linux-musl) echo "linux arm64" ;;
    x86_64-apple-darwin) echo "darwin x64" ;;
    aarch64-apple-darwin) echo "darwin arm64" ;;
    *) echo "stage.sh: no npm platform for target $1 (Linux and macOS only)" >&2; return 1 ;;
  esac
}

pack() {
  (cd "$1" && npm pack --silent --pack-destination "$out") | sed "s|^|$out/|"
}

# The launcher: the template's 0.0.0 (its version and its optional dependencies) becomes VERSION.
mkdir -p "$work/acp"
cp -R "$here/acp/." "$work/acp/"
sed -i.bak "s/\"0\.0\.0\"/\"$version\"/g" "$work/acp/package.json" && rm "$work/acp/package.json.bak"
pack "$work/acp"

while [ "$#" -ge 2 ]; do
  binary="$1" target="$2"
  shift 2
  read -r os cpu < <(platform_of "$target")
  dir="$work/$os-$cpu"
  mkdir -p "$dir/bin"
  cp "$binary" "$dir/bin/tinycode"
  chmod 755 "$dir/bin/tinycode"
  sed -e "s/@PLATFORM@/$os-$cpu/g" -e "s/@VERSION@/$version/g" -e "s/@OS@/$os/g" -e "s/@CPU@/$cpu/g" \
    "$here/platform/package.json.in" > "$dir/package.json"
  printf '# @tinycode/acp-%s\n\nThe tinycode binary for %s %s, installed by `@tinycode/acp`.\n' "$os-$cpu" "$os" "$cpu" > "$dir/README.md"
  pack "$dir"
done
