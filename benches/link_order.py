#!/usr/bin/env python3
"""Write packaging/link-order.txt: the functions a typical session runs, which the release build of
x86_64-unknown-linux-gnu lays out first and together (build.rs hands the file to the linker).

Why: the kernel maps a program's code 64 KB at a time around each page it first touches. Spread over 12 MB of
code, the few megabytes a session runs touch most of it: about 10 MB of the binary were resident after a grep,
most of it code that never ran. Laid out together, the code that runs fills as few of those windows as it can.

How: the release binary, linked with its symbols, runs the workload below under callgrind (no instrumentation
of ours), and every function of the binary that executed is written out, by symbol. The editor's first two
requests come first, in the order they first run (valgrind's lackey traces a start that answers `initialize` and
`session/new`): most of their time was page faults, one per 64 KB window of code they touched, and code that runs
one after the other then shares its windows. The rest follows in the order the binary had them. The symbols must be the release build's own: any change to the profile (even `strip`) changes the hashes in
every name, so only the final link is redone with its symbols kept, and the ordinary build relinks afterwards:

    cargo rustc --release --locked --bin tinycode -- -C strip=none && cp target/release/tinycode /tmp/tc-symbols
    python3 benches/link_order.py --binary /tmp/tc-symbols && cargo build --release --locked

Symbol names carry hashes that change with the compiler and with the dependencies' versions: after either
changes, run this again (stale names are skipped by the linker: the layout degrades, the build does not break).
Measured with benches/memory.py: resident memory after a grep over 100,000 files fell from 16.2 to 10.3 MB.
The workload: start, `initialize`, two sessions, a streamed answer, and a turn that reads, edits, writes, runs a
command, greps and globs (a small tree: the code paths are the same as for a large one).
"""
import argparse
import bisect
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent as bench  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "packaging", "link-order.txt")


def under_valgrind(binary, output, tool):
    """Have benches/agent.py start `binary` under valgrind with `tool` (its options), writing to `output`."""
    wrapper = output + ".sh"
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec valgrind {tool}={output} {binary} \"$@\" 2>/dev/null\n")
    os.chmod(wrapper, 0o755)
    bench.BINARY = wrapper


def workload(binary, profile):
    under_valgrind(binary, profile, "--tool=callgrind --demangle=no --callgrind-out-file")
    model = bench.Model()
    with tempfile.TemporaryDirectory() as workdir:
        tree = os.path.join(workdir, "tree")
        bench.make_tree(tree, files=1_000)
        path = os.path.join(workdir, "lib.rs")
        with open(path, "w") as f:
            f.write("".join(f"pub fn f{n}() -> u32 {{ {n} }}\n" for n in range(200)))
        agent = bench.Agent(workdir, model)
        sid = agent.session(workdir)
        model.replies = [[bench.say("word%d " % n, finish=False) for n in range(200)] + [bench.say("", True)]]
        agent.prompt(sid, "write a long answer")
        model.replies = [
            bench.call("c1", "read", {"file_path": path}),
            bench.call("c2", "edit", {"file_path": path, "old_string": "pub fn f7() -> u32 { 7 }",
                                      "new_string": "pub fn f7() -> u32 { 8 }"}),
            bench.call("c3", "write", {"file_path": os.path.join(workdir, "new.rs"), "content": "fn main() {}\n"}),
            bench.call("c4", "bash", {"command": "grep -c 'u32 { 8 }' lib.rs", "description": "Count"}),
            bench.call("c5", "grep", {"pattern": "needle_here", "path": tree}),
            bench.call("c6", "glob", {"pattern": "**/*_7.rs", "path": tree}),
            [bench.say("Done.")],
        ]
        agent.prompt(sid, "make f7 return 8")
        other = agent.session(workdir)
        agent.request("session/list", {})
        agent.request("session/close", {"sessionId": other})
        agent.close()


def startup(binary, trace):
    """Start `binary` under lackey, tracing every block of code it runs into `trace`, and have it answer the
    editor's first two requests; it exits on the end of its input."""
    under_valgrind(binary, trace, "--tool=lackey --trace-superblocks=yes --log-file")
    model = bench.Model()
    with tempfile.TemporaryDirectory() as workdir:
        agent = bench.Agent(workdir, model)
        agent.request("session/new", {"cwd": workdir, "mcpServers": []})
        agent.close()


def first_run_order(trace, binary):
    """The binary's functions in the order the traced blocks first entered them."""
    symbols = subprocess.run(["nm", "--defined-only", "--numeric-sort", binary], capture_output=True, text=True,
                             check=True).stdout
    starts, names = [], []
    for line in symbols.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            starts.append(int(parts[0], 16))
            names.append(parts[2])
    seen, ordered = set(), []
    for line in open(trace, errors="replace"):
        if not line.startswith("SB "):
            continue
        address = int(line[3:], 16)
        index = bisect.bisect_right(starts, address) - 1
        if index >= 0 and names[index] not in seen:
            seen.add(names[index])
            ordered.append(names[index])
    return ordered


def executed(profile, binary):
    """The symbols of `binary` that have cost in the callgrind profile."""
    names, current_object, ran = {}, None, set()
    real = os.path.realpath(binary)
    for line in open(profile, errors="replace"):
        match = re.match(r"^(ob|fn|cob|cfn|fl|fi|fe|cfi|cfl)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not match:
            continue
        kind, index, name = match.groups()
        space = "ob" if kind in ("ob", "cob") else "fn" if kind in ("fn", "cfn") else "fl"
        if name:
            names[(space, index)] = name
        if kind == "ob":
            current_object = names.get((space, index))
        elif kind == "fn" and current_object and os.path.realpath(current_object) == real:
            ran.add(names.get((space, index)))
    return ran


def in_binary_order(binary, ran):
    symbols = subprocess.run(["nm", "--defined-only", "--numeric-sort", binary], capture_output=True, text=True,
                             check=True).stdout
    seen, ordered = set(), []
    for line in symbols.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT" and parts[2] in ran and parts[2] not in seen:
            seen.add(parts[2])
            ordered.append(parts[2])
    return ordered


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True, help="a release build with its symbols (see above)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        trace = os.path.join(scratch, "lackey.out")
        startup(os.path.abspath(args.binary), trace)
        first = first_run_order(trace, args.binary)
        profile = os.path.join(scratch, "callgrind.out")
        workload(os.path.abspath(args.binary), profile)
        ran = executed(profile, args.binary)
    listed = set(first)
    ordered = first + [name for name in in_binary_order(args.binary, ran) if name not in listed]
    with open(OUTPUT, "w") as out:
        out.write("".join(name + "\n" for name in ordered))
    print(f"{len(ordered)} functions written to {os.path.relpath(OUTPUT, ROOT)}, the first {len(first)} in the "
          "order the first two requests ran them")


if __name__ == "__main__":
    main()
