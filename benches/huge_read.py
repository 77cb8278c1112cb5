#!/usr/bin/env python3
"""`read` of 200 lines near the end of a 50 MB file, through the agent (raw ACP client and fake model of
benches/agent.py), beside coreutils and Python doing the same: wall time and the memory each needs. For the agent,
the time is the tool call's `in_progress` -> `completed` seen by the client and the memory is how far its peak RSS
(VmHWM) rose above its resident size before the call; for the others, the child's own peak RSS (`wait4`).

    cargo build --release && python3 benches/huge_read.py [--runs 5] [--binary PATH]

Target (issue 14): at most 5 MB of extra memory for the read.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent as bench  # noqa: E402

LINE = "let value = compute_something_expensive(alpha, beta, gamma); // padding {:>9}\n"


def make_file(path, size=50 * 1024 * 1024):
    count = size // len(LINE.format(0))
    with open(path, "w") as f:
        # In slices, so this process stays small: a child's peak RSS counts what it had before `exec`.
        for start in range(0, count, 10_000):
            f.write("".join(LINE.format(i) for i in range(start, min(start + 10_000, count))))
    return count


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key + ":"))


def child(command):
    """Wall time (ms) and peak RSS (MB) of one child process, as GNU time reports them (started from `time`,
    not from this process, whose own size a forked child's peak would count)."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M", *command], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, check=True, text=True)
    seconds, kb = out.stderr.split()[-2:]
    return float(seconds) * 1000, int(kb) / 1024


def cpu_ms(pid):
    """CPU time of every thread of `pid` so far (scheduler statistics, nanoseconds)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=bench.BINARY)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    bench.BINARY = args.binary
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().split()[0]}")
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "big.log")
        lines = make_file(path)
        offset = lines - 200
        model = bench.Model()
        agent = bench.Agent(workdir, model)
        sid = agent.session(workdir)
        times, extra, cpu = [], [], []
        for _ in range(args.runs):
            before, cpu_before = status_kb(agent.proc.pid, "VmRSS"), cpu_ms(agent.proc.pid)
            times.append(bench.tool_time(agent, sid, model, "read", {"file_path": path, "offset": offset, "limit": 200}))
            extra.append((status_kb(agent.proc.pid, "VmHWM") - before) / 1024)
            cpu.append(cpu_ms(agent.proc.pid) - cpu_before)
        agent.close()
        python = f"import itertools,sys;f=open({path!r});sys.stdout.writelines(itertools.islice(f,{offset},{offset + 200}))"
        others = {
            "tail -n 200": ["tail", "-n", "200", path],
            f"sed -n '{offset + 1},{offset + 200}p'": ["sed", "-n", f"{offset + 1},{offset + 200}p", path],
            "python3 itertools.islice": [sys.executable, "-c", python],
        }
        print(f"read of lines {offset + 1}-{offset + 200} of a {os.path.getsize(path) / 1e6:.0f} MB file "
              f"({lines} lines), median of {args.runs}:")
        print(f"  tinycode read tool   {statistics.median(times):7.1f} ms (agent CPU for the whole prompt "
              f"{statistics.median(cpu):.1f} ms), peak RSS +{max(extra):.1f} MB over its resident size "
              f"(target <= 5 MB)")
        for name, command in others.items():
            runs = [child(command) for _ in range(args.runs)]
            print(f"  {name:<20} {statistics.median(r[0] for r in runs):7.1f} ms, peak RSS "
                  f"{statistics.median(r[1] for r in runs):.1f} MB (whole process)")


if __name__ == "__main__":
    main()
