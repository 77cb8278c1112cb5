#!/usr/bin/env python3
"""End-to-end benchmarks of the binary as an editor sees it: a raw JSON-RPC client on its stdio and a fake
OpenAI-compatible streaming model on 127.0.0.1 (both in this script). Needs Linux (/proc) and a release build:

    cargo build --release && python3 benches/agent.py [turn|search|relay|all] [--runs N] [--binary PATH]

- turn: a scripted 4-step prompt (read, edit, shell, answer) in `yolo` mode; wall time of the prompt and the agent's
  peak RSS (VmHWM) after it.
- search: `grep` and `glob` tool runs (client-side `in_progress` -> `completed`) on a generated 100,000-file tree,
  next to `rg` on the same tree (rg columns skipped with a note when rg is not installed).
- relay: the agent's overhead per streamed chunk: a 5,000-chunk answer against the same text in one chunk, minus
  the same difference for a plain HTTP client reading the stream (the fake model's own cost).
Prints `RESULT <key> <value>` lines for benches/table.sh, and a readable summary.
"""
import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import artefacts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = artefacts.built()
# Added to the agent's environment (benches/memory.py sets an allocator with it).
EXTRA_ENV = {}


class Model:
    """A fake model playing a queue of replies (each a list of SSE chunk objects)."""

    def __init__(self):
        self.replies = []
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(500)
                self.end_headers()

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.endswith("/chat/completions"):
                    # Model metadata probes of a loopback server (Ollama's /api/show) take no scripted reply.
                    self.send_response(404)
                    self.end_headers()
                    return
                chunks = model.replies.pop(0) if model.replies else [say("(script exhausted)")]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                self.wfile.write(body.encode())

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def say(text, finish=True):
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop" if finish else None}]}


def call(id_, name, args):
    return [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}, "finish_reason": "tool_calls"}]}]


class Agent:
    """The binary on a raw JSON-RPC connection; answers permission asks with allow_once."""

    def __init__(self, workdir, model):
        env = {
            "HOME": workdir, "PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": os.path.join(workdir, "config"),
            "TINYCODE_DATA_DIR": os.path.join(workdir, "data"), "TINYCODE_BASE_URL": model.url,
            "TINYCODE_MODEL": "bench",
        }
        env.update(EXTRA_ENV)
        self.proc = subprocess.Popen([BINARY, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, bufsize=0, cwd=workdir)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    def send(self, obj):
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())

    def request(self, method, params, on_update=None):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            frame = json.loads(self.proc.stdout.readline())
            if frame.get("id") == self.next_id and "method" not in frame:
                if "error" in frame:
                    raise SystemExit(f"{method}: {frame['error']}")
                return frame["result"]
            if frame.get("method") == "session/request_permission":
                self.send({"jsonrpc": "2.0", "id": frame["id"],
                           "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}})
            elif frame.get("method") == "session/update" and on_update:
                on_update(frame["params"]["update"], time.perf_counter())

    def session(self, cwd):
        sid = self.request("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        self.request("session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "yolo"})
        return sid

    def prompt(self, sid, text, on_update=None):
        start = time.perf_counter()
        result = self.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
                              on_update)
        return time.perf_counter() - start, result

    def peak_rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def result(key, value, unit):
    print(f"RESULT {key} {value:.3f} {unit}", flush=True)


def bench_turn(runs):
    model = Model()
    times = []
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "lib.rs")
        agent = Agent(workdir, model)
        for i in range(runs + 1):
            with open(path, "w") as f:
                f.write("".join(f"pub fn f{n}() -> u32 {{ {n} }}\n" for n in range(200)))
            model.replies = [
                call("c1", "read", {"file_path": path}),
                call("c2", "edit", {"file_path": path, "old_string": "pub fn f7() -> u32 { 7 }", "new_string": "pub fn f7() -> u32 { 8 }"}),
                call("c3", "bash", {"command": "grep -c 'u32 { 8 }' lib.rs", "description": "Count"}),
                [say("Done: f7 returns 8.")],
            ]
            sid = agent.session(workdir)
            elapsed, answer = agent.prompt(sid, "make f7 return 8")
            assert answer["stopReason"] == "end_turn" and not model.replies, answer
            if i > 0:
                times.append(elapsed * 1000)
        rss = agent.peak_rss_mb()
        agent.close()
    result("turn_ms", statistics.median(times), "ms")
    result("turn_rss_mb", rss, "MB")


def make_tree(root, files=100_000, per_dir=100):
    for d in range(files // per_dir):
        directory = os.path.join(root, f"d{d // 100}", f"s{d % 100}")
        os.makedirs(directory)
        for n in range(per_dir):
            i = d * per_dir + n
            with open(os.path.join(directory, f"f{i}_{i % 10}.rs"), "w") as f:
                f.write(f"// file {i}\nfn item_{i}() {{}}\n" + ("// needle_here\n" if i % 1000 == 0 else ""))


CALLS = iter(range(1_000_000))


def tool_time(agent, sid, model, name, args):
    """Client-side time from the tool call's `in_progress` to its `completed` update."""
    marks, id_ = {}, f"t{next(CALLS)}"

    def on_update(update, at):
        if update.get("toolCallId") == id_ and update.get("status") in ("in_progress", "completed", "failed"):
            marks[update["status"]] = at

    model.replies = [call(id_, name, args), [say("ok")]]
    agent.prompt(sid, "search", on_update)
    assert "completed" in marks and "in_progress" in marks, marks
    return (marks["completed"] - marks["in_progress"]) * 1000


def timed(command):
    start = time.perf_counter()
    out = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000, out.stdout.count(b"\n")


def bench_search(runs):
    model = Model()
    rg = shutil.which("rg")
    with tempfile.TemporaryDirectory() as workdir:
        tree = os.path.join(workdir, "tree")
        start = time.perf_counter()
        make_tree(tree)
        print(f"generated 100,000 files in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        agent = Agent(workdir, model)
        sid = agent.session(workdir)
        grep = {"pattern": "needle_here", "path": tree}
        glob = {"pattern": "**/*_7.rs", "path": tree}
        tool_time(agent, sid, model, "grep", grep)  # warm the page cache
        result("grep_ms", statistics.median(tool_time(agent, sid, model, "grep", grep) for _ in range(runs)), "ms")
        result("glob_ms", statistics.median(tool_time(agent, sid, model, "glob", glob) for _ in range(runs)), "ms")
        agent.close()
        if rg:
            result("rg_grep_ms", statistics.median(timed([rg, "-l", "needle_here", tree])[0] for _ in range(runs)), "ms")
            result("rg_glob_ms", statistics.median(timed([rg, "--files", "-g", "*_7.rs", tree])[0] for _ in range(runs)), "ms")
        else:
            print("RESULT rg_grep_ms - (rg not installed)")
            print("RESULT rg_glob_ms - (rg not installed)")


def stream(chunks):
    return [say("x ", finish=False) for _ in range(chunks - 1)] + [say("x ")]


def raw_stream_ms(model, reply):
    model.replies = [reply]
    start = time.perf_counter()
    request = urllib.request.Request(model.url + "/chat/completions", data=b"{}", method="POST")
    with urllib.request.urlopen(request) as response:
        for _ in response:
            pass
    return (time.perf_counter() - start) * 1000


def bench_relay(runs, chunks=5000):
    model = Model()
    many, one = stream(chunks), [say("x " * chunks)]
    with tempfile.TemporaryDirectory() as workdir:
        agent = Agent(workdir, model)
        sid = agent.session(workdir)

        def agent_ms(reply):
            model.replies = [reply]
            return agent.prompt(sid, "stream")[0] * 1000

        agent_ms(many)
        agent_many = statistics.median(agent_ms(many) for _ in range(runs))
        agent_one = statistics.median(agent_ms(one) for _ in range(runs))
        agent.close()
    raw_many = statistics.median(raw_stream_ms(model, many) for _ in range(runs))
    raw_one = statistics.median(raw_stream_ms(model, one) for _ in range(runs))
    per_chunk_us = ((agent_many - agent_one) - (raw_many - raw_one)) / chunks * 1000
    print(f"agent {agent_many:.1f} ms ({chunks} chunks) vs {agent_one:.1f} ms (1 chunk); "
          f"plain reader {raw_many:.1f} vs {raw_one:.1f} ms", file=sys.stderr)
    result("relay_us_per_chunk", per_chunk_us, "us")


def main():
    global BINARY
    parser = argparse.ArgumentParser()
    parser.add_argument("what", nargs="?", default="all", choices=["turn", "search", "relay", "all"])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--binary", default=BINARY)
    args = parser.parse_args()
    BINARY = os.path.abspath(args.binary)
    if not os.path.exists(BINARY):
        raise SystemExit("build first: cargo build --release")
    for what, bench in [("turn", bench_turn), ("search", bench_search), ("relay", bench_relay)]:
        if args.what in (what, "all"):
            bench(args.runs)


if __name__ == "__main__":
    main()
