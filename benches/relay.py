#!/usr/bin/env python3
"""Streaming relay benchmark: a loopback fake model streams N text chunks as fast as it can write
them; the release binary relays them to a raw ACP client on stdout. Prints chunks/s in, agent CPU per input
chunk (CPU time of the agent's threads from /proc, less that of a one-chunk answer, so load on the machine does not
inflate it), the number of `session/update`
messages the agent sent, and the fake's own send rate into a reader that only drains (the reference), for each
wire format (Chat Completions, Responses, Anthropic Messages; `--dialect` picks one):

    cargo build --release && python3 benches/relay.py [--chunks 30000] [--dialect all] [--binary PATH]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import threading
import time

import artefacts

BINARY = artefacts.built()
TICK = os.sysconf("SC_CLK_TCK")


# The dialects: (provider kind for TINYCODE_PROVIDER, the path the agent posts to).
DIALECTS = {
    "chat": ("openai-compatible", b"/chat/completions"),
    "responses": ("openai", b"/responses"),
    "messages": ("anthropic", b"/messages"),
}


def event(name, data):
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def sse_body(chunks, dialect="chat"):
    """The streamed answer in `dialect`'s wire format: `chunks` text deltas of 4 bytes, then its ending."""
    if dialect == "chat":
        one = 'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "}}]}\n\n'
        done = ('data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
                "data: [DONE]\n\n")
        return [one.encode()] * chunks, done.encode()
    if dialect == "responses":
        one = event("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1",
                                                    "output_index": 0, "content_index": 0, "delta": "tok "})
        done = event("response.completed", {"type": "response.completed", "response": {
            "status": "completed", "usage": {"input_tokens": 10, "output_tokens": chunks}}})
        return [one.encode()] * chunks, done.encode()
    start = (event("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}})
             + event("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}}))
    one = event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": "tok "}})
    done = (event("content_block_stop", {"type": "content_block_stop", "index": 0})
            + event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                      "usage": {"output_tokens": chunks}})
            + event("message_stop", {"type": "message_stop"}))
    return [start.encode() + one.encode()] + [one.encode()] * (chunks - 1), done.encode()


def serve(listener, chunks, sent, dialect="chat"):
    """Answer every request on `listener`: the stream for a model request, an empty list for a GET, 404 for
    another POST (a loopback server's metadata probe)."""
    body, done = sse_body(chunks, dialect)
    path = DIALECTS[dialect][1]
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=answer, args=(conn, body, done, sent, path), daemon=True).start()


def answer(conn, body, done, sent, path):
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
        if path not in head.split(b"\r\n", 1)[0]:
            conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
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
    """CPU time of every thread of `pid` so far, from the scheduler's statistics (nanoseconds, not 10 ms ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e9


def relay(binary, chunks, workdir, dialect="chat"):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    sent = []
    threading.Thread(target=serve, args=(listener, chunks, sent, dialect), daemon=True).start()
    env = {
        "HOME": workdir,
        "XDG_CONFIG_HOME": os.path.join(workdir, "config"),
        "TINYCODE_DATA_DIR": os.path.join(workdir, "data"),
        "TINYCODE_BASE_URL": f"http://127.0.0.1:{listener.getsockname()[1]}/v1",
        "TINYCODE_API_KEY": "bench",
        "TINYCODE_MODEL": "bench",
        "TINYCODE_PROVIDER": DIALECTS[dialect][0],
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
    parser.add_argument("--dialect", choices=[*DIALECTS, "all"], default="all")
    args = parser.parse_args()
    if not os.path.exists(args.binary):
        raise SystemExit("build first: cargo build --release")
    reference = fake_send_rate(args.chunks)
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().split()[0]}")
    print(f"fake model's own send rate (drained reader): {reference:,.0f} chunks/s")
    for dialect in DIALECTS if args.dialect == "all" else [args.dialect]:
        many, one = [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as workdir:
                wall, cpu, updates, sending = relay(args.binary, args.chunks, workdir, dialect)
            many.append(cpu)
            with tempfile.TemporaryDirectory() as workdir:
                one.append(relay(args.binary, 1, workdir, dialect)[1])
            rate = args.chunks / sending
            print(f"{dialect:<9} relayed {args.chunks:,} chunks in {updates:,} updates: {rate:,.0f} chunks/s in "
                  f"({rate / reference:.2f}x the fake's rate, target >= 100k/s), prompt CPU {cpu * 1000:.1f} ms, "
                  f"prompt->response {wall * 1000:.0f} ms")
        per_chunk = (statistics.median(many) - statistics.median(one)) / (args.chunks - 1)
        print(f"{dialect:<9} agent CPU per chunk: {per_chunk * 1e6:.2f} us (median prompt CPU of {args.chunks:,} chunks "
              f"less that of one chunk; target <= 3 us)")


if __name__ == "__main__":
    main()
