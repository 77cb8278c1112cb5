#!/usr/bin/env bash
# Every figure of the "fast at the extremes" targets in one sitting, on the binary `cargo build --release` builds,
# each beside its reference (spawn of /bin/true, Python, ripgrep, the fake model's own rate), with the machine's
# load average before and after. Prints each script's summary lines; nothing is written to the README.
#
#     benches/extremes.sh [--skip-build]       (TINYCODE_BIN=PATH measures another binary)
#
# About 15 minutes on 2 cores (two 100,000-file trees are generated; the edit bench is compiled in the bench
# profile, which reuses the release build's dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--skip-build" ]; then
  cargo build --release --locked --quiet
fi
binary="${TINYCODE_BIN:-$PWD/target/$(rustc -vV | sed -n 's/^host: //p')/release/tinycode}"
# Measure a copy, as installers leave it, not the linker's output: how a binary's pages entered the page cache
# changes how much the kernel maps around each fault (peak RSS at `session/new` 4.3-8.5 MB for one build;
# benches/README.md, sixth pass).
installed="$(mktemp -d)"
trap 'rm -rf "$installed"' EXIT
cp "$binary" "$installed/tinycode"
binary="$installed/tinycode"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC'); $(git rev-parse --short HEAD); binary $binary"
echo "== startup (target: initialize <= 1.5 ms, session/new <= 1 ms)"
python3 benches/startup.py --runs 50 --binary "$binary"
echo "== 10 MB edit (target: <= 60 ms tool_call -> completed, <= 25 MB traffic, <= 40 MB peak RSS, <= 1 MB database)"
python3 benches/huge_edit.py --runs 7 --binary "$binary"
echo "== read near the end of a 52 MB file (target: <= 5 MB extra)"
python3 benches/huge_read.py --binary "$binary"
echo "== streaming relay (target: >= 100k chunks/s in, <= 3 us agent CPU per chunk)"
python3 benches/relay.py --dialect all --binary "$binary"
echo "== memory (target: <= 15 MB after grep, <= 25 MB after 1,000 prompts, flat over long replies)"
python3 benches/memory.py --only built-in --binary "$binary"
echo "== grep and glob against ripgrep"
python3 benches/agent.py search --runs 7 --binary "$binary"
echo "== edit matching (target: a 200-line miss on 10,000 lines <= 50 ms, stopped <= 5 ms after a cancel)"
cargo bench --locked --quiet --bench edit
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%H:%M UTC')"
