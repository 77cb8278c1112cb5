"""A fake language server for the LSP tests (standard library only).

Usage: python3 fake_lsp.py MODE LOGFILE
  publish  answers initialize (after sending the client four requests of its own), and on every didSave publishes
           an error for each line containing "ERROR:" and a warning for each "WARN:" of that file, plus one error
           in a sibling file other.rs; answers shutdown and leaves on exit.
  crash    answers initialize, then dies (status 3, a line on stderr) when a document is opened.
  silent   reads everything and never answers.
Every message received is appended to LOGFILE as one JSON line ({"got": method} or {"response": id, ...}), after
a first {"start": pid} line, so a test can check the whole conversation.
"""

import json
import os
import sys

MODE, LOG = sys.argv[1], sys.argv[2]


def log(entry):
    with open(LOG, "a") as f:
        f.write(json.dumps(entry) + "\n")


def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
    return json.loads(sys.stdin.buffer.read(length))


def send(message):
    body = json.dumps(dict(message, jsonrpc="2.0")).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def publish(uri, text, version):
    diagnostics = []
    for number, line in enumerate(text.split("\n")):
        for marker, severity in (("ERROR:", 1), ("WARN:", 2)):
            at = line.find(marker)
            if at >= 0:
                diagnostics.append({
                    "range": {"start": {"line": number, "character": at}, "end": {"line": number, "character": len(line)}},
                    "severity": severity,
                    "code": "E1",
                    "source": "fake",
                    "message": line[at + len(marker):].strip(),
                })
    send({"method": "textDocument/publishDiagnostics", "params": {"uri": uri, "version": version, "diagnostics": diagnostics}})
    other = uri.rsplit("/", 1)[0] + "/other.rs"
    stale = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "severity": 1, "message": "unresolved import"}
    send({"method": "textDocument/publishDiagnostics", "params": {"uri": other, "diagnostics": [stale]}})


def main():
    log({"start": os.getpid()})
    texts, versions = {}, {}
    while True:
        message = read()
        if message is None:
            log({"eof": True})
            return
        method = message.get("method")
        if method is None:
            log({"response": message.get("id"), "result": message.get("result"), "error": message.get("error")})
            continue
        log({"got": method})
        if MODE == "silent":
            continue
        params = message.get("params") or {}
        if method == "initialize":
            send({"id": "s1", "method": "workspace/configuration", "params": {"items": [{"section": "a"}, {"section": "b"}]}})
            send({"id": "s2", "method": "window/workDoneProgress/create", "params": {"token": "t"}})
            send({"id": "s3", "method": "client/registerCapability", "params": {"registrations": []}})
            send({"id": "s4", "method": "custom/unknown", "params": {}})
            send({"id": message["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
        elif method == "textDocument/didOpen":
            if MODE == "crash":
                sys.stderr.write("fake crash: boom\n")
                sys.stderr.flush()
                os._exit(3)
            document = params["textDocument"]
            texts[document["uri"]], versions[document["uri"]] = document["text"], document["version"]
        elif method == "textDocument/didChange":
            document = params["textDocument"]
            texts[document["uri"]], versions[document["uri"]] = params["contentChanges"][-1]["text"], document["version"]
        elif method == "textDocument/didSave":
            uri = params["textDocument"]["uri"]
            publish(uri, texts.get(uri, ""), versions.get(uri))
        elif method == "shutdown":
            send({"id": message["id"], "result": None})
        elif method == "exit":
            return


main()
