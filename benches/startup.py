#!/usr/bin/env python3
"""Startup benchmark: spawn the release binary, measure spawn -> `initialize` response, `session/new` latency and
peak RSS (VmHWM). Needs Linux (/proc) and a release build:

    cargo build --release && python3 benches/startup.py [--runs 50] [--binary PATH]

No model is contacted: `session/new` must never wait on the network.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import artefacts

BINARY = artefacts.built()


def one_run(workdir):
    env = {
        "HOME": workdir,
        "XDG_CONFIG_HOME": os.path.join(workdir, "config"),
        "TINYCODE_DATA_DIR": os.path.join(workdir, "data"),
        "TINYCODE_BASE_URL": "http://127.0.0.1:9/v1",
        "TINYCODE_MODEL": "bench",
    }
    start = time.perf_counter()
    proc = subprocess.Popen([BINARY, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, bufsize=0)

    pending = bytearray()

    def call(obj):
        # Read whole chunks: `readline` on an unbuffered pipe reads one byte per system call, which costs the
        # client up to a millisecond per answer and would be counted against the agent.
        proc.stdin.write((json.dumps(obj) + "\n").encode())
        while b"\n" not in pending:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                raise SystemExit("the agent closed stdout")
            pending.extend(chunk)
        end = pending.index(b"\n")
        line = bytes(pending[:end])
        del pending[: end + 1]
        return json.loads(line)

    init = call({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    t_init = time.perf_counter() - start
    assert init["result"]["protocolVersion"] == 1, init
    t0 = time.perf_counter()
    new = call({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": workdir, "mcpServers": []}})
    t_new = time.perf_counter() - t0
    assert new["result"]["sessionId"].startswith("sess_"), new
    with open(f"/proc/{proc.pid}/status") as status:
        hwm_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    proc.stdin.close()
    proc.wait(timeout=10)
    return t_init * 1000, t_new * 1000, hwm_kb / 1024


def floor_run():
    """Spawn `/bin/true` and wait for it: the cost of starting any process, the floor of the startup figure."""
    start = time.perf_counter()
    proc = subprocess.Popen(["/bin/true"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=0)
    os.read(proc.stdout.fileno(), 1)  # its end of stdout: the process has started and exited
    elapsed = (time.perf_counter() - start) * 1000
    proc.stdin.close()
    proc.wait()
    return elapsed


def summary(name, values, unit):
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"{name:<28} median {statistics.median(values):7.2f} {unit}   p95 {p95:7.2f} {unit}   min {values[0]:7.2f} {unit}"


def main():
    global BINARY
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--binary", default=BINARY, help="the binary to start (default: the release build)")
    args = parser.parse_args()
    BINARY = args.binary
    if not os.path.exists(BINARY):
        raise SystemExit("build first: cargo build --release")
    inits, news, totals, rss, floor = [], [], [], [], []
    with tempfile.TemporaryDirectory() as workdir:
        one_run(workdir)  # warm the page cache
        for _ in range(args.runs):
            a, b, c = one_run(workdir)
            inits.append(a)
            news.append(b)
            totals.append(a + b)
            rss.append(c)
            floor.append(floor_run())
    print(f"{args.runs} runs of {BINARY}")
    print(summary("spawn of /bin/true", floor, "ms"))
    print(summary("spawn -> initialize response", inits, "ms"))
    print(summary("session/new", news, "ms"))
    # What the editor waits for before its first session: `initialize` is answered before the rest of the agent
    # has started, so `session/new` also waits for that rest; the sum is the figure to compare across builds.
    print(summary("spawn -> session/new answered", totals, "ms"))
    print(summary("peak RSS (VmHWM)", rss, "MB"))


if __name__ == "__main__":
    main()
