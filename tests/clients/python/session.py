"""A full tinycode session driven by the official Python ACP SDK (`agent-client-protocol`, pinned in
requirements.txt): initialize, session/new, a turn with read and edit tool calls and a permission ask (allowed),
a turn cancelled while its command runs, then session/load in a second process with the replay.

Usage: python3 session.py BINARY WORKDIR (the model comes from TINYCODE_BASE_URL in the environment).
Prints one line per event; tests/suite/sdk_clients.rs compares the whole transcript.
"""

import asyncio
import json
import os
import sys

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)


def show(*words):
    print(" ".join(w if isinstance(w, str) else json.dumps(w, separators=(",", ":"), ensure_ascii=False) for w in words), flush=True)


class Client:
    def __init__(self, cwd):
        self.cwd = cwd
        self.conn = None
        self.session = None
        self.cancel_on = None

    def rel(self, path):
        return os.path.relpath(path, self.cwd)

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        show("ask", tool_call.tool_call_id, [o.option_id for o in options])
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow_once"))

    async def session_update(self, session_id, update, **kwargs):
        kind = update.session_update
        if kind in ("agent_message_chunk", "user_message_chunk", "agent_thought_chunk"):
            show("update", kind, json.dumps(update.content.text, ensure_ascii=False))
        elif kind == "tool_call":
            show("update", kind, update.tool_call_id, update.kind, json.dumps(update.title, ensure_ascii=False))
        elif kind == "tool_call_update":
            # An update without a status (the finished preview of an edit) shows as "-".
            show("update", kind, update.tool_call_id, update.status or "-")
            if update.tool_call_id == self.cancel_on and update.status == "in_progress":
                show("cancel")
                await self.conn.cancel(session_id=session_id)
        else:
            show("update", kind)

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        show("fs/read_text_file", self.rel(path))
        with open(path) as f:
            return ReadTextFileResponse(content=f.read())

    async def write_text_file(self, session_id, path, content, **kwargs):
        show("fs/write_text_file", self.rel(path), json.dumps(content))
        with open(path, "w") as f:
            f.write(content)
        return WriteTextFileResponse()

    def on_connect(self, conn):
        self.conn = conn


async def start(binary, client, cwd):
    capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    cm = spawn_agent_process(lambda conn: client, binary, "acp", cwd=cwd, env=dict(os.environ))
    conn, _process = await cm.__aenter__()
    client.conn = conn
    info = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=capabilities,
        client_info=Implementation(name="python-sdk-client", version="1"),
    )
    show("initialize", info.protocol_version, info.agent_info.name, "loadSession", info.agent_capabilities.load_session)
    return cm, conn


async def main(binary, cwd):
    client = Client(cwd)
    cm, conn = await start(binary, client, cwd)
    session = await conn.new_session(cwd=cwd, mcp_servers=[])
    show("session/new", [m.id for m in session.modes.available_modes])
    answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("edit the notes")])
    show("prompt", answer.stop_reason)
    client.cancel_on = "call_sleep"
    answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("wait a while")])
    show("prompt", answer.stop_reason)
    await cm.__aexit__(None, None, None)
    show("notes.txt", json.dumps(open(os.path.join(cwd, "notes.txt")).read()))

    show("-- second process")
    client = Client(cwd)
    cm, conn = await start(binary, client, cwd)
    await conn.load_session(cwd=cwd, session_id=session.session_id, mcp_servers=[])
    show("session/load done")
    answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("still there?")])
    show("prompt", answer.stop_reason)
    await cm.__aexit__(None, None, None)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
