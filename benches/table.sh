#!/usr/bin/env bash
# One command for the benchmark table: builds the release binary, runs benches/startup.py, benches/agent.py and the
# edit and session cargo benches, and prints the Markdown table that benches/README.md shows (between its
# `table` markers, which `--write` replaces). The machine's load average is printed with the table: figures taken
# on a loaded machine are noisy; compare runs taken under similar load.
#
#     benches/table.sh [--write] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
write=0
runs=10
while [ $# -gt 0 ]; do
  case "$1" in
    --write) write=1 ;;
    --runs) runs="$2"; shift ;;
    *) echo "usage: benches/table.sh [--write] [--runs N]" >&2; exit 2 ;;
  esac
  shift
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
load_before=$(cut -d' ' -f1 /proc/loadavg)
cargo build --release --locked --quiet
python3 benches/startup.py --runs $((runs * 3)) > "$out/startup"
python3 benches/agent.py all --runs "$runs" > "$out/agent"
python3 benches/relay.py --dialect all > "$out/relay"
# The benches build into their own target dir: `cargo bench` would otherwise replace target/release/tinycode with
# the bench profile's binary, and the next run would measure that one.
CARGO_TARGET_DIR=target/benches cargo bench --locked --quiet --bench edit > "$out/edit"
CARGO_TARGET_DIR=target/benches cargo bench --locked --quiet --bench sessions > "$out/sessions"
load_after=$(cut -d' ' -f1 /proc/loadavg)

# median of a startup.py summary line, by its label
startup() { grep "^$1" "$out/startup" | sed -E 's/.*median +([0-9.]+) ([a-zA-Z]+).*/\1 \2/'; }
result() { awk -v k="$1" '$1 == "RESULT" && $2 == k { $1 = ""; $2 = ""; sub(/^  /, ""); print }' "$out/agent"; }
median() { grep "$2" "$out/$1" | head -1 | sed -E 's/.*median ([0-9.]+[µmn]?s).*/\1/'; }
# agent CPU per streamed chunk of one wire format, from relay.py
relay() { grep "^$1 .*agent CPU per chunk" "$out/relay" | sed -E 's/.*per chunk: ([0-9.]+ us).*/\1/'; }

table=$(cat <<TABLE
| Measure | Tool | Figure (median) |
|---|---|---|
| spawn of \`/bin/true\` (the floor) | \`benches/startup.py\` | $(startup "spawn of /bin/true") |
| spawn → \`initialize\` answered, raw client | \`benches/startup.py\` | $(startup "spawn -> initialize") |
| \`session/new\` answered | \`benches/startup.py\` | $(startup "session/new") |
| peak RSS after \`session/new\` | \`benches/startup.py\` | $(startup "peak RSS") |
| scripted 4-step prompt (read, edit, shell, answer), \`yolo\` | \`benches/agent.py turn\` | $(result turn_ms) |
| peak RSS after $((runs + 1)) such prompts | \`benches/agent.py turn\` | $(result turn_rss_mb) |
| \`grep\` tool on a 100,000-file tree (10² matching files) | \`benches/agent.py search\` | $(result grep_ms) |
| \`rg -l\`, same tree and pattern (process spawn included) | \`benches/agent.py search\` | $(result rg_grep_ms) |
| \`glob\` tool, \`**/*_7.rs\` on the same tree (10,000 files) | \`benches/agent.py search\` | $(result glob_ms) |
| \`rg --files -g '*_7.rs'\`, same tree | \`benches/agent.py search\` | $(result rg_glob_ms) |
| edit cascade, 10,000 lines, relaxed block anchor | \`cargo bench --bench edit\` | $(median edit "relaxed block anchor") |
| \`session/load\` of 1,000 messages, replay received | \`cargo bench --bench sessions\` | $(median sessions "session/load") |
| relay: agent CPU per streamed chunk, Chat Completions (30,000 chunks) | \`benches/relay.py\` | $(relay chat) |
| relay: agent CPU per streamed chunk, OpenAI Responses | \`benches/relay.py\` | $(relay responses) |
| relay: agent CPU per streamed chunk, Anthropic Messages | \`benches/relay.py\` | $(relay messages) |

Measured $(date -u +%Y-%m-%d) on $(nproc) cores, load average ${load_before} before and ${load_after} after; the
binary as \`cargo build --release\` builds it, the cargo benches with LTO \`${CARGO_PROFILE_BENCH_LTO:-fat}\`.
TABLE
)
echo "$table"
if [ "$write" = 1 ]; then
  python3 - "$table" <<'PY'
import re, sys
path = "benches/README.md"
text = open(path).read()
block = "<!-- table:begin (benches/table.sh --write) -->\n" + sys.argv[1] + "\n<!-- table:end -->"
text = re.sub(r"<!-- table:begin.*?<!-- table:end -->", lambda _: block, text, flags=re.S)
open(path, "w").write(text)
PY
fi
