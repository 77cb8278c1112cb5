#!/usr/bin/env python3
"""Streaming relay benchmark: a loopback fake model streams N text chunks (OpenAI SSE) as fast as it can write
them; the release binary relays them to a raw ACP client on stdout. Prints chunks/s in, agent CPU per input
chunk (utime+stime from /proc, so load on the machine does not inflate it), the number of `session/update`
messages the agent sent, and the fake's own send rate into a reader that only drains (the reference):

    cargo build --release && python3 benches/relay.py [--chunks 30000] [--binary PATH]
"""
import argparse
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "tinycode")
TICK = os.sysconf("SC_CLK_TCK")


def sse_body(chunks):
    one = 'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "}}]}\n\n'
    done = ('data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
            "data: [DONE]\n\n")
    return [one.encode()] * chunks, done.encode()


def serve(listener, chunks, sent):
    """Answer every request on `listener`: the stream for a completion, an empty list for anything else."""
    body, done = sse_body(chunks)
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=answer, args=(conn, body, done, sent), daemon=True).start()


def answer(conn, body, done, sent):
    with conn:
        request = b""
        while b"\r\n\r\n" not in request:
            data = conn.recv(65536)
            if not data:
                return
            request += data
        head, rest = request.split(b"\r\n\r\n", 1)
        length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")), 0)
        while len(rest) < length:
            rest += conn.recv(65536)
        if not head.startswith(b"POST"):
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"data\":[]}")
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
        start = time.perf_counter()
        batch = 64
        for i in range(0, len(body), batch):
            conn.sendall(b"".join(body[i:i + batch]))
        conn.sendall(done)
        sent.append(time.perf_counter() - start)


def fake_send_rate(chunks):
    """The fake's own rate: the same writes into a reader that only drains."""
    body, done = sse_body(chunks)
    a, b = socket.socketpair()

    def drain():
        while b.recv(1 << 20):
            pass

    reader = threading.Thread(target=drain)
    reader.start()
    start = time.perf_counter()
    for i in range(0, len(body), 64):
        a.sendall(b"".join(body[i:i + 64]))
    a.sendall(done)
    elapsed = time.perf_counter() - start
    a.close()
    reader.join()
    b.close()
    return chunks / elapsed


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def relay(binary, chunks, workdir):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    sent = []
    threading.Thread(target=serve, args=(listener, chunks, sent), daemon=True).start()
    env = {
        "HOME": workdir,
        "XDG_CONFIG_HOME": os.path.join(workdir, "config"),
        "TINYCODE_DATA_DIR": os.path.join(workdir, "data"),
        "TINYCODE_BASE_URL": f"http://127.0.0.1:{listener.getsockname()[1]}/v1",
        "TINYCODE_API_KEY": "bench",
        "TINYCODE_MODEL": "bench",
    }
    proc = subprocess.Popen([binary, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, bufsize=0)
    out = proc.stdout

    def send(obj):
        proc.stdin.write((json.dumps(obj) + "\n").encode())

    def until(id_):
        updates = 0
        while True:
            line = out.readline()
            if not line:
                raise SystemExit("the agent exited")
            message = json.loads(line)
            if message.get("id") == id_ and "method" not in message:
                return message, updates
            if message.get("method") == "session/update":
                update = message["params"]["update"]
                if update.get("sessionUpdate") == "agent_message_chunk":
                    updates += 1

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    until(1)
    send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": workdir, "mcpServers": []}})
    session = until(2)[0]["result"]["sessionId"]
    cpu0, t0 = cpu_seconds(proc.pid), time.perf_counter()
    send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
          "params": {"sessionId": session, "prompt": [{"type": "text", "text": "stream"}]}})
    response, updates = until(3)
    wall, cpu = time.perf_counter() - t0, cpu_seconds(proc.pid) - cpu0
    assert response.get("result", {}).get("stopReason") == "end_turn", response
    proc.stdin.close()
    proc.wait(timeout=10)
    listener.close()
    return wall, cpu, updates, sent[0] if sent else wall


def main():
    parser = argparse.ArgumentParser()
    # 30,000 chunks of 4 bytes stay under the ~32,000-token output cap a response has without max_output_tokens.
    parser.add_argument("--chunks", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--binary", default=BINARY)
    args = parser.parse_args()
    if not os.path.exists(args.binary):
        raise SystemExit("build first: cargo build --release")
    reference = fake_send_rate(args.chunks)
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().split()[0]}")
    print(f"fake model's own send rate (drained reader): {reference:,.0f} chunks/s")
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as workdir:
            wall, cpu, updates, sending = relay(args.binary, args.chunks, workdir)
        rate = args.chunks / sending
        print(f"relayed {args.chunks:,} chunks in {updates:,} updates: {rate:,.0f} chunks/s in "
              f"({rate / reference:.2f}x the fake's rate, target >= 100k/s), "
              f"{cpu / args.chunks * 1e6:.2f} us agent CPU per chunk (target <= 3 us), prompt->response {wall * 1000:.0f} ms")


if __name__ == "__main__":
    main()
