#!/usr/bin/env python3
"""A 10 MB edit end to end: the release binary, a loopback fake model that asks for `read` then `edit` on a 10 MB
file, and a raw ACP client that allows the ask. Prints the agent's time for the edit (its tool_call to its
completed update, the ask answered at once), the agent CPU for the whole prompt, the ACP traffic (bytes both
ways), the agent's peak RSS (VmHWM) and what the session database grew by, beside Python doing the same edit
(read, replace, write):

    cargo build --release && python3 benches/huge_edit.py [--binary PATH]
"""
import argparse
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

import artefacts

BINARY = artefacts.built()
TICK = os.sysconf("SC_CLK_TCK")
LINE = "let value = compute_something_expensive(alpha, beta, gamma); // padding padding padding\n"


def make_file(path):
    body = LINE * (10 * 1024 * 1024 // len(LINE) // 2) + "let unique_marker = 42;\n" + LINE * (10 * 1024 * 1024 // len(LINE) // 2)
    with open(path, "w") as f:
        f.write(body)
    return body


def sse(delta, finish):
    events = [{"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]},
              {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def tool_call(id_, name, args):
    return sse({"tool_calls": [{"index": 0, "id": id_, "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)}}]}, "tool_calls")


def serve(listener, replies):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                data = conn.recv(1 << 20)
                if not data:
                    break
                request += data
            head, rest = request.split(b"\r\n\r\n", 1)
            length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")), 0)
            while len(rest) < length:
                rest += conn.recv(1 << 20)
            # Only model requests take a scripted reply (not GET /models, nor Ollama's POST /api/show).
            if not head.startswith(b"POST") or b"/chat/completions" not in head.split(b"\r\n", 1)[0]:
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"data\":[]}")
                continue
            body = replies.pop(0) if replies else sse({"content": "done"}, "stop")
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n" + body.encode())


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def hwm_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmRSS:")) / 1024


def db_bytes(data):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(data) for f in fs if ".db" in f or f.endswith("-wal"))


def python_edit(path):
    start = time.perf_counter()
    with open(path) as f:
        text = f.read()
    text = text.replace("let unique_marker = 42;", "let unique_marker = 43;", 1)
    with open(path, "w") as f:
        f.write(text)
    return time.perf_counter() - start


def run(binary, workdir):
    path = os.path.join(workdir, "big.rs")
    make_file(path)
    replies = [tool_call("r", "read", {"file_path": path, "limit": 5}),
               tool_call("e", "edit", {"file_path": path, "old_string": "let unique_marker = 42;", "new_string": "let unique_marker = 43;"})]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    threading.Thread(target=serve, args=(listener, replies), daemon=True).start()
    data = os.path.join(workdir, "data")
    env = {"HOME": workdir, "XDG_CONFIG_HOME": os.path.join(workdir, "config"), "TINYCODE_DATA_DIR": data,
           "TINYCODE_BASE_URL": f"http://127.0.0.1:{listener.getsockname()[1]}/v1", "TINYCODE_API_KEY": "bench",
           "TINYCODE_MODEL": "bench"}
    proc = subprocess.Popen([binary, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, bufsize=0, cwd=workdir)
    traffic = [0]
    marks = {}

    def send(obj):
        line = (json.dumps(obj) + "\n").encode()
        traffic[0] += len(line)
        proc.stdin.write(line)

    def until(id_):
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("the agent exited")
            traffic[0] += len(line)
            message = json.loads(line)
            if message.get("id") == id_ and "method" not in message:
                return message
            if message.get("method") == "session/request_permission":
                send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}})
            update = message.get("params", {}).get("update", {})
            if update.get("toolCallId") == "e":
                if update.get("sessionUpdate") == "tool_call":
                    marks["start"] = time.perf_counter()
                if update.get("status") == "completed":
                    marks["end"] = time.perf_counter()

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    until(1)
    send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": workdir, "mcpServers": []}})
    session = until(2)["result"]["sessionId"]
    db_before, traffic_before, cpu0 = db_bytes(data), traffic[0], cpu_seconds(proc.pid)
    rss_before = rss_mb(proc.pid)
    send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
          "params": {"sessionId": session, "prompt": [{"type": "text", "text": "bump the marker"}]}})
    until(3)
    cpu, hwm = cpu_seconds(proc.pid) - cpu0, hwm_mb(proc.pid)
    proc.stdin.close()
    proc.wait(timeout=10)
    listener.close()
    with open(path) as f:
        assert "let unique_marker = 43;" in f.read()
    return (marks["end"] - marks["start"], cpu, traffic[0] - traffic_before, hwm, db_bytes(data) - db_before,
            python_edit(path), rss_before)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=BINARY)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().split()[0]}")
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as workdir:
            edit, cpu, traffic, hwm, db, python, before = run(args.binary, workdir)
        print(f"10 MB edit: {edit * 1000:.1f} ms tool_call->completed (python read+replace+write {python * 1000:.1f} ms, "
              f"ratio {edit / python:.1f}x; target <= 60 ms), prompt CPU {cpu * 1000:.0f} ms (read + edit), "
              f"ACP traffic {traffic / 1e6:.2f} MB (target <= 25), peak RSS {hwm:.1f} MB (target <= 40; "
              f"{before:.1f} MB before the prompt), "
              f"database +{db / 1e6:.2f} MB (target <= 1)")


if __name__ == "__main__":
    main()
