#!/usr/bin/env bash
# Build tinycode's release binaries for every platform this machine can build and pack them the way GitHub
# releases, the ACP Registry, Zed and npm expect. Writes to OUT (default dist/):
#
#   tinycode-<version>-<target>.tar.gz   the binary at the archive's root (the registry runs ./tinycode acp)
#   SHA256SUMS                           checksums of the archives
#   npm/*.tgz                            @tinycode/acp (launcher) and one @tinycode/acp-<os>-<cpu> per binary
#   agent.json                           the ACP Registry entry (packaging/registry/agent.json)
#   extension.toml                       the Zed extension manifest, with the sha256 of each archive built here
#
# Platforms: Linux and macOS on x86_64 and aarch64 (Windows is not supported). A target is built when its Rust
# standard library is installed (`rustup target list --installed`) and a linker for it exists; every other
# target is named with the reason it was skipped. Publishing (upload, `npm publish`, the registry pull request)
# is left to the release manager.
#
#   packaging/release.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
for manifest in packaging/registry/agent.json packaging/zed/extension.toml; do
  if ! grep -Eq "^ *\"?version\"? *[:=] *\"$version\"" "$manifest"; then
    echo "release.sh: $manifest is not at version $version (Cargo.toml); update it first" >&2
    exit 1
  fi
done
mkdir -p "$out"
rm -f "$out"/tinycode-*.tar.gz "$out/SHA256SUMS"
host="$(rustc -vV | sed -n 's/^host: //p')"
installed="$(rustup target list --installed 2>/dev/null || echo "$host")"
target_dir="${CARGO_TARGET_DIR:-target}"

# Why `$1` cannot be built here (empty when it can); sets the linker for cross builds.
why_not() {
  local target="$1"
  if ! grep -qx "$target" <<<"$installed"; then
    echo "its standard library is not installed (rustup target add $target)"
    return
  fi
  [ "$target" = "$host" ] && return
  case "$target" in
    *-apple-darwin)
      [[ "$host" == *-apple-darwin ]] || echo "it needs a macOS host (Apple's SDK and linker)" ;;
    aarch64-unknown-linux-gnu)
      if command -v aarch64-linux-gnu-gcc >/dev/null; then
        export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
      else
        echo "no aarch64-linux-gnu-gcc linker (Debian: gcc-aarch64-linux-gnu)"
      fi ;;
    x86_64-unknown-linux-gnu)
      if command -v x86_64-linux-gnu-gcc >/dev/null; then
        export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=x86_64-linux-gnu-gcc
      else
        echo "no x86_64-linux-gnu-gcc linker (Debian: gcc-x86-64-linux-gnu)"
      fi ;;
  esac
}

built=()
skipped=()

# Where cargo puts the binary for `$1` (every build names its target: .cargo/config.toml); the host's is the
# ordinary release build, so an existing one is reused.
binary_of() {
  echo "$target_dir/$1/release/tinycode"
}
for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin; do
  reason="$(why_not "$target")"
  if [ -n "$reason" ]; then
    skipped+=("$target: $reason")
    continue
  fi
  why_not "$target" >/dev/null # export the linker in this shell too
  echo "== building $target"
  if [ "$target" = "$host" ]; then
    cargo build --release --locked
    # The code layout names this build's functions (benches/link_order.py); a stale list is fixed, not shipped.
    if [ "$target" = x86_64-unknown-linux-gnu ]; then python3 benches/link_order.py --check; fi
  else
    cargo build --release --locked --target "$target"
  fi
  archive="tinycode-$version-$target.tar.gz"
  tar -C "$(dirname "$(binary_of "$target")")" -czf "$out/$archive" tinycode
  (cd "$out" && sha256sum "$archive" >> SHA256SUMS 2>/dev/null || shasum -a 256 "$archive" >> SHA256SUMS)
  built+=("$target")
done
if [ "${#built[@]}" -eq 0 ]; then
  echo "release.sh: no target can be built here" >&2
  exit 1
fi

cp packaging/registry/agent.json "$out/agent.json"
cp packaging/zed/extension.toml "$out/extension.toml"
for target in "${built[@]}"; do
  archive="tinycode-$version-$target.tar.gz"
  sum="$(grep " $archive\$" "$out/SHA256SUMS" | cut -d' ' -f1)"
  awk -v archive="$archive" -v sum="$sum" '{ print } /^archive = / && index($0, archive) { print "sha256 = \"" sum "\"" }' \
    "$out/extension.toml" > "$out/extension.toml.new"
  mv "$out/extension.toml.new" "$out/extension.toml"
done

if command -v npm >/dev/null; then
  pairs=()
  for target in "${built[@]}"; do
    pairs+=("$(binary_of "$target")" "$target")
  done
  rm -rf "$out/npm"
  packaging/npm/stage.sh "$version" "$out/npm" "${pairs[@]}" >/dev/null
else
  skipped+=("npm packages: npm is not installed")
fi

echo "== tinycode $version"
for target in "${built[@]}"; do
  echo "built    $target ($(wc -c < "$(binary_of "$target")") bytes)"
done
for line in ${skipped[@]+"${skipped[@]}"}; do
  echo "skipped  $line"
done
(cd "$out" && ls -1 tinycode-*.tar.gz SHA256SUMS agent.json extension.toml npm/*.tgz 2>/dev/null | sed 's/^/wrote    /')
