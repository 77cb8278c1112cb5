#!/usr/bin/env python3
"""Resident memory of the agent after the three workloads the allocator choice is judged on, for the allocator
the binary was built with and for others swapped in through the environment (glibc with `MALLOC_ARENA_MAX`,
jemalloc and mimalloc by `LD_PRELOAD` when their shared libraries are installed: `apt-get install libjemalloc2
libmimalloc2.0`). A raw ACP client and the fake model of benches/agent.py:

    cargo build --release && python3 benches/memory.py [--binary PATH] [--only NAME]

- grep: VmRSS after three `grep` tool runs over a generated 100,000-file tree (target <= 15 MB);
- prompts: VmRSS after 1,000 prompts in one session, each answered with a short text (target <= 25 MB);
- replies: VmRSS after each of 8 rounds of a new session whose answer streams 8,000 chunks (~70 KB, under the
  default output cap),
  closed with `session/close`: first, last and the growth between them (target: flat).
VmRSS is read while the agent is idle, after the last answer. Prints one table row per allocator.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent as bench  # noqa: E402

LIBS = "/usr/lib/x86_64-linux-gnu"
ALLOCATORS = [
    ("built-in", {}),
    ("glibc, MALLOC_ARENA_MAX=2", {"MALLOC_ARENA_MAX": "2"}),
    ("glibc, MALLOC_ARENA_MAX=1", {"MALLOC_ARENA_MAX": "1"}),
    ("glibc, MALLOC_ARENA_MAX=1, fixed mmap threshold 128 KB",
     {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_THRESHOLD_": "131072"}),
    ("glibc, MALLOC_ARENA_MAX=2, fixed mmap threshold 128 KB",
     {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072"}),
    ("jemalloc 5.3 (LD_PRELOAD)", {"LD_PRELOAD": f"{LIBS}/libjemalloc.so.2"}),
    ("mimalloc 2.0 (LD_PRELOAD)", {"LD_PRELOAD": f"{LIBS}/libmimalloc.so.2"}),
]


def rss_mb(agent):
    with open(f"/proc/{agent.proc.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def after_grep(tree):
    model = bench.Model()
    with tempfile.TemporaryDirectory() as workdir:
        agent = bench.Agent(workdir, model)
        sid = agent.session(workdir)
        for _ in range(3):
            bench.tool_time(agent, sid, model, "grep", {"pattern": "needle_here", "path": tree})
        rss = rss_mb(agent)
        agent.close()
    return rss


def after_prompts(count=1000):
    model = bench.Model()
    with tempfile.TemporaryDirectory() as workdir:
        agent = bench.Agent(workdir, model)
        sid = agent.session(workdir)
        for i in range(count):
            model.replies = [[bench.say(f"answer {i}: " + "text " * 20)]]
            agent.prompt(sid, f"question {i}")
        rss = rss_mb(agent)
        agent.close()
    return rss


def after_replies(rounds=8, chunks=8_000):
    model = bench.Model()
    seen = []
    with tempfile.TemporaryDirectory() as workdir:
        agent = bench.Agent(workdir, model)
        for _ in range(rounds):
            sid = agent.session(workdir)
            model.replies = [[bench.say("word%d " % n, finish=False) for n in range(chunks)] + [bench.say("", True)]]
            agent.prompt(sid, "write a long answer")
            agent.request("session/close", {"sessionId": sid})
            seen.append(rss_mb(agent))
        agent.close()
    return seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=bench.BINARY)
    parser.add_argument("--only", help="run only the allocator whose name starts with this")
    args = parser.parse_args()
    bench.BINARY = args.binary
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().split()[0]}", flush=True)
    with tempfile.TemporaryDirectory() as treedir:
        tree = os.path.join(treedir, "tree")
        bench.make_tree(tree)
        print("| allocator | RSS after grep, 100k files (<= 15 MB) | after 1,000 prompts (<= 25 MB) "
              "| after 8 long replies, first -> last (flat) |")
        print("|---|---|---|---|")
        for name, env in ALLOCATORS:
            if args.only and not name.startswith(args.only):
                continue
            if "LD_PRELOAD" in env and not os.path.exists(env["LD_PRELOAD"]):
                print(f"| {name} | not installed | | |")
                continue
            bench.EXTRA_ENV = env
            grep, prompts, replies = after_grep(tree), after_prompts(), after_replies()
            print(f"| {name} | {grep:.1f} MB | {prompts:.1f} MB | {replies[0]:.1f} -> {replies[-1]:.1f} MB "
                  f"({replies[-1] - replies[0]:+.1f}) |", flush=True)


if __name__ == "__main__":
    main()
