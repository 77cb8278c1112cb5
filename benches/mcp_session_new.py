#!/usr/bin/env python3
"""`session/new` with three stdio MCP servers against `session/new` without any, from a raw JSON-RPC client on the
binary's stdin/stdout (no SDK in between). The servers start in the background: the answer must not wait for them.
Target: at most 2 ms median, the same as without servers.

    cargo build --release --features mcp-fixture --bins && python3 benches/mcp_session_new.py [--runs 60]
    python3 benches/mcp_session_new.py --binary target/<host triple>/debug/tinycode \
        --fixture target/<host triple>/debug/tinycode-mcp-fixture

Three kinds of session are interleaved in one agent process: none, three servers declared by the editor in
`mcpServers`, three servers in the user's configuration (`[mcp.NAME]`). After each session with servers the client
waits until the servers are up (the `available_commands_update` with their prompts), then closes the session and
waits for the answer (the servers are gone), so one run's servers never compete with the next run's answer. Wall
time and the agent's CPU time (all threads, from /proc/PID/task/*/schedstat) between request and answer are reported; on a
loaded machine CPU time is the figure load does not inflate. Needs Linux (/proc).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import artefacts



class Agent:
    def __init__(self, binary, workdir, config):
        cfg = os.path.join(workdir, "config", "tinycode")
        os.makedirs(cfg, exist_ok=True)
        with open(os.path.join(cfg, "config.toml"), "w") as f:
            f.write(config)
        env = {
            "HOME": workdir,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "XDG_CONFIG_HOME": os.path.join(workdir, "config"),
            "TINYCODE_DATA_DIR": os.path.join(workdir, "data"),
            "TINYCODE_BASE_URL": "http://127.0.0.1:9/v1",
            "TINYCODE_MODEL": "bench",
        }
        self.proc = subprocess.Popen([binary, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, bufsize=0)
        self.next_id = 0
        self.notes = []

    def send(self, method, params):
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                           "params": params}) + "\n").encode())
        return self.next_id

    def read(self):
        message = json.loads(self.proc.stdout.readline())
        if "method" in message and "id" in message:  # a request of the agent: refuse it
            self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                               "error": {"code": -32601, "message": "no"}}) + "\n").encode())
        elif "method" in message:
            self.notes.append(message)
        return message

    def answer(self, request_id):
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    def until(self, condition):
        while not any(condition(n) for n in self.notes):
            self.read()

    def cpu(self):
        """Seconds on CPU of all the agent's threads (schedstat: nanoseconds, unlike stat's clock ticks)."""
        total = 0
        task_dir = f"/proc/{self.proc.pid}/task"
        for tid in os.listdir(task_dir):
            try:
                with open(f"{task_dir}/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except FileNotFoundError:
                pass  # the thread ended meanwhile
        return total / 1e9

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def servers_ready(agent, session, names):
    """Wait until every server's prompt is advertised (all three are up)."""
    def ready(note):
        update = note.get("params", {}).get("update", {})
        if note.get("params", {}).get("sessionId") != session:
            return False
        if update.get("sessionUpdate") != "available_commands_update":
            return False
        advertised = {c["name"] for c in update.get("availableCommands", [])}
        return all(f"mcp__{n}__review" in advertised for n in names)
    agent.until(ready)


def measure(agent, workdir, servers):
    agent.notes.clear()
    cpu0, t0 = agent.cpu(), time.perf_counter()
    request = agent.send("session/new", {"cwd": workdir, "mcpServers": servers})
    answer = agent.answer(request)
    wall, cpu = (time.perf_counter() - t0) * 1000, (agent.cpu() - cpu0) * 1000
    return answer["result"]["sessionId"], wall, cpu


def summary(name, values):
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"{name:<42} median {statistics.median(values):6.2f} ms   p95 {p95:6.2f} ms   min {values[0]:6.2f} ms"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--binary", default=artefacts.built())
    parser.add_argument("--fixture", default=artefacts.built("tinycode-mcp-fixture"))
    args = parser.parse_args()
    args.binary, args.fixture = os.path.abspath(args.binary), os.path.abspath(args.fixture)
    for path in (args.binary, args.fixture):
        if not os.path.exists(path):
            raise SystemExit(f"{path} is missing: cargo build --release --features mcp-fixture --bins")
    names = ["a", "b", "c"]
    editor = [{"name": n, "command": args.fixture, "args": [], "env": []} for n in names]
    config = "".join(f'[mcp.c{n}]\ncommand = "{args.fixture}"\n' for n in names)
    with tempfile.TemporaryDirectory() as workdir:
        work = os.path.join(workdir, "work")
        os.makedirs(work)
        agent = Agent(args.binary, workdir, "")
        agent.answer(agent.send("initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        configured = Agent(args.binary, os.path.join(workdir, "configured"), config)
        configured.answer(configured.send("initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        results = {"none": ([], []), "editor": ([], []), "config": ([], [])}
        for run in range(args.runs + 1):
            for kind, who, servers, ready in [("none", agent, [], []), ("editor", agent, editor, names),
                                              ("config", configured, [], ["c" + n for n in names])]:
                session, wall, cpu = measure(who, work, servers)
                if ready:
                    servers_ready(who, session, ready)
                who.answer(who.send("session/close", {"sessionId": session}))
                if run > 0:  # the first run warms up
                    results[kind][0].append(wall)
                    results[kind][1].append(cpu)
        agent.close()
        configured.close()
    load = os.getloadavg()[0]
    print(f"{args.runs} runs of {args.binary}, load average {load:.1f} on {os.cpu_count()} cores")
    for kind, label in [("none", "no MCP servers"), ("editor", "three stdio servers from mcpServers"),
                        ("config", "three stdio servers from [mcp.NAME]")]:
        wall, cpu = results[kind]
        print(summary(f"session/new, {label}: wall", wall))
        print(summary(f"session/new, {label}: agent CPU", cpu))


if __name__ == "__main__":
    main()
