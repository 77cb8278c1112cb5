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

    cargo rustc --release --locked --bin tinycode -- -C strip=none && cp target/x86_64-unknown-linux-gnu/release/tinycode /tmp/tc-symbols
    python3 benches/link_order.py --binary /tmp/tc-symbols && cargo build --release --locked

Symbol names carry each crate's disambiguator, a hash of its version, features, profile and dependencies (and
the compiler's): adding or bumping any dependency renames every function of tinycode's own crate. The linker skips
names the binary does not have, so a stale list does not break the build, it only undoes the layout (it did once:
1,957 of 4,778 names stale after one new dependency, start-up 1.54 -> 2.24 ms). Two things keep the list true:

- tinycode is built with v0 symbol names (`.cargo/config.toml`), which spell out every crate and generic argument;
  only the disambiguators change. `--rebase` reads the names of the current release build from its artefacts
  (the libraries' bitcode, the toolchain's standard library; `src/main.rs` only calls the library so that no
  function is compiled into the binary crate alone) and rewrites each stale name to the one that differs only in
  disambiguators. Seconds, no valgrind, no extra link:

      cargo build --release --locked && python3 benches/link_order.py --rebase && cargo build --release --locked

- `--check` (run by .ci/run and packaging/release.sh after the release build) fails when more than 2% of the
  list's names are missing from that build, and says which command fixes it. Functions that no longer exist
  (code changes) are dropped by `--rebase`; the full run above finds the new ones.
Measured with benches/memory.py: resident memory after a grep over 100,000 files fell from 16.2 to 10.3 MB.
The workload: start, `initialize`, two sessions, a streamed answer, and a turn that reads, edits, writes, runs a
command, greps and globs (a small tree: the code paths are the same as for a large one).
"""
import argparse
import bisect
import collections
import json
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


# How much of the list may be missing from the build before --check fails.
MOST_MISSING = 0.02


class V0:
    """Rust's v0 symbol names (RFC 2603), parsed only to find where each one ends: the libraries' bitcode keeps its
    names in one string table, one after the other, with nothing between them."""

    BASIC = frozenset(b"abcdefhijlmnostuvxyzp")

    def __init__(self, data):
        self.data = data

    def at(self, i):
        if i >= len(self.data):
            raise ValueError("past the end")
        return self.data[i]

    def name(self, i):
        """The end of the name that starts at `i` (`_R`), or ValueError."""
        i += 2
        if chr(self.at(i)).isdigit():
            i = self.decimal(i)[1]
        i = self.path(i)
        if i < len(self.data) and self.data[i] in b"CMXYNIB":
            try:
                return self.path(i)  # the instantiating crate
            except (ValueError, RecursionError):
                pass  # the next string of the table, not part of this name
        return i

    def decimal(self, i):
        if self.at(i) == ord("0"):
            return 0, i + 1  # no leading zeros: "00" is two numbers
        start = i
        while i < len(self.data) and 48 <= self.data[i] <= 57:
            i += 1
        if i == start:
            raise ValueError("no number")
        return int(self.data[start:i]), i

    def base62(self, i):
        while self.at(i) != ord("_"):
            if not chr(self.data[i]).isalnum():
                raise ValueError("not base 62")
            i += 1
        return i + 1

    def word(self, i):
        if self.at(i) == ord("u"):
            i += 1
        length, i = self.decimal(i)
        if self.at(i) == ord("_"):
            i += 1
        if i + length > len(self.data):
            raise ValueError("past the end")
        return i + length

    def identifier(self, i):
        return self.word(self.base62(i + 1) if self.at(i) == ord("s") else i)

    def path(self, i):
        c = chr(self.at(i))
        if c == "C":
            return self.identifier(i + 1)
        if c in "MX":
            i = self.base62(i + 2) if self.at(i + 1) == ord("s") else i + 1
            i = self.type(self.path(i))
            return self.path(i) if c == "X" else i
        if c == "Y":
            return self.path(self.type(i + 1))
        if c == "N":
            if not chr(self.at(i + 1)).isalpha():
                raise ValueError("no namespace")
            return self.identifier(self.path(i + 2))
        if c == "I":
            i = self.path(i + 1)
            while self.at(i) != ord("E"):
                i = self.generic(i)
            return i + 1
        if c == "B":
            return self.base62(i + 1)
        raise ValueError("not a path")

    def generic(self, i):
        c = chr(self.at(i))
        if c == "L":
            return self.base62(i + 1)
        if c == "K":
            return self.const(i + 1)
        return self.type(i)

    def const(self, i):
        c = self.at(i)
        if c == ord("p"):
            return i + 1
        if c == ord("B"):
            return self.base62(i + 1)
        if c not in self.BASIC:
            raise ValueError("a constant of a kind not parsed here")
        i += 1
        if self.at(i) == ord("n"):
            i += 1
        return self.base62(i)

    def type(self, i):
        c = self.at(i)
        if c in self.BASIC:
            return i + 1
        c = chr(c)
        if c == "A":
            return self.const(self.type(i + 1))
        if c in "SPO":
            return self.type(i + 1)
        if c == "T":
            i += 1
            while self.at(i) != ord("E"):
                i = self.type(i)
            return i + 1
        if c in "RQ":
            i += 1
            if self.at(i) == ord("L"):
                i = self.base62(i + 1)
            return self.type(i)
        if c == "F":
            return self.signature(i + 1)
        if c == "D":
            i = self.bounds(i + 1)
            if self.at(i) != ord("L"):
                raise ValueError("no lifetime")
            return self.base62(i + 1)
        return self.path(i)

    def signature(self, i):
        if self.at(i) == ord("G"):
            i = self.base62(i + 1)
        if self.at(i) == ord("U"):
            i += 1
        if self.at(i) == ord("K"):
            i = i + 2 if self.at(i + 1) == ord("C") else self.word(i + 1)
        while self.at(i) != ord("E"):
            i = self.type(i)
        return self.type(i + 1)

    def bounds(self, i):
        if self.at(i) == ord("G"):
            i = self.base62(i + 1)
        while self.at(i) != ord("E"):
            i = self.path(i)
            while self.at(i) == ord("p"):
                i = self.type(self.word(i + 1))
        return i + 1

    def names(self):
        """Every v0 name in the data."""
        found, position = set(), 0
        while (start := self.data.find(b"_R", position)) >= 0:
            try:
                end = self.name(start)
            except (ValueError, RecursionError):
                position = start + 1
                continue
            found.add(self.data[start:end].decode())
            position = end
        return found


def built_names():
    """Every v0 name in the current release build's libraries and in the toolchain's standard library."""
    messages = subprocess.run(["cargo", "build", "--release", "--locked", "--message-format=json"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout
    libraries = [name for line in messages.splitlines() if line.startswith("{")
                 for message in [json.loads(line)] if message.get("reason") == "compiler-artifact"
                 for name in message.get("filenames", []) if name.endswith(".rlib")]
    libdir = subprocess.run(["rustc", "--print", "target-libdir"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    libraries += [os.path.join(libdir, name) for name in os.listdir(libdir) if name.endswith(".rlib")]
    names = set()
    for library in libraries:
        with open(library, "rb") as f:
            names |= V0(f.read()).names()
    return names


def rust(name):
    return name.startswith("_R")


def base(name):
    """A name without the `.N` suffix the optimiser gives a copy of a function."""
    return name.split(".", 1)[0]


def without_disambiguators(name, references=False):
    """A v0 name with its crates' disambiguators blanked, and with `references` its back-references too (offsets
    that move when a disambiguator's length changes): the same function in another build has the same key."""
    name = re.sub(r"Cs[0-9A-Za-z]+_", "Cs_", name)
    return re.sub(r"B[0-9A-Za-z]*_", "B_", name) if references else name


def rebase(listed, names):
    """`listed` with each stale name replaced by the one name of the build that differs from it only in
    disambiguators; names without such a match are dropped. Returns the new list and what happened, counted."""
    by_key = {False: collections.defaultdict(list), True: collections.defaultdict(list)}
    for name in names:
        for references, keyed in by_key.items():
            keyed[without_disambiguators(name, references)].append(name)
    counts, out, seen = collections.Counter(), [], set()
    for name in listed:
        stem, suffix = base(name), name[len(base(name)):]
        # The same disambiguators' lengths keep the back-references; other lengths move them.
        candidates = [keyed.get(without_disambiguators(stem, references), []) for references, keyed in by_key.items()]
        unique = next((found[0] for found in candidates if len(found) == 1), None)
        if not rust(name) or stem in names:
            found, counts["kept"] = name, counts["kept"] + 1
        elif unique:
            found, counts["renamed"] = unique + suffix, counts["renamed"] + 1
        else:
            counts["dropped"] += 1
            continue
        if found not in seen:
            seen.add(found)
            out.append(found)
    return out, counts


def check(listed, names):
    """Exit 1, saying how to fix it, when too much of the list is missing from the build."""
    named = [name for name in listed if rust(name)]
    missing = [name for name in named if base(name) not in names]
    share = len(missing) / max(len(named), 1)
    print(f"link order: {len(named) - len(missing)} of the {len(named)} Rust functions in "
          f"{os.path.relpath(OUTPUT, ROOT)} are in this release build ({share:.1%} missing, at most "
          f"{MOST_MISSING:.0%} allowed)")
    if share > MOST_MISSING:
        for name in missing[:5]:
            print(f"  missing: {name}")
        print("The list is stale (a dependency, the compiler or the profile changed, or RUSTFLAGS replaced the v0 "
              "names of .cargo/config.toml). Fix: cargo build --release --locked && python3 benches/link_order.py "
              "--rebase && cargo build --release --locked (benches/link_order.py explains the full run)")
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", help="a release build with its symbols (see above): write the list anew")
    parser.add_argument("--rebase", action="store_true", help="rename the list's stale names to this build's")
    parser.add_argument("--check", action="store_true", help="fail when the list is stale for this build")
    args = parser.parse_args()
    if args.rebase or args.check:
        listed = [line.strip() for line in open(OUTPUT) if line.strip()]
        names = built_names()
        if args.rebase:
            listed, counts = rebase(listed, names)
            with open(OUTPUT, "w") as out:
                out.write("".join(name + "\n" for name in listed))
            print(f"rebased {os.path.relpath(OUTPUT, ROOT)}: {counts['kept']} kept, {counts['renamed']} renamed, "
                  f"{counts['dropped']} dropped (no function of that name in this build)")
        check(listed, names)
        return
    if not args.binary:
        parser.error("one of --binary, --rebase or --check is needed")
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
