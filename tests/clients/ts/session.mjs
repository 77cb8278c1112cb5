// A full tinycode session driven by the official TypeScript ACP SDK (@agentclientprotocol/sdk, pinned in
// package.json): initialize, session/new, a turn with read and edit tool calls and a permission ask (allowed), a
// turn cancelled while its command runs, then session/load in a second process with the replay.
//
// Usage: node session.mjs BINARY WORKDIR (the model comes from TINYCODE_BASE_URL in the environment).
// Prints one line per event; tests/suite/sdk_clients.rs compares the whole transcript.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { Readable, Writable } from "node:stream";
import { PROTOCOL_VERSION, client, ndJsonStream } from "@agentclientprotocol/sdk";

const [binary, cwd] = process.argv.slice(2);
const show = (...words) => console.log(words.map((w) => (typeof w === "string" ? w : JSON.stringify(w))).join(" "));
const quote = (text) => JSON.stringify(text);

function app(state) {
  return client()
    .onRequest("session/request_permission", ({ params }) => {
      show("ask", params.toolCall.toolCallId, params.options.map((o) => o.optionId));
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    })
    .onRequest("fs/read_text_file", ({ params }) => {
      show("fs/read_text_file", relative(cwd, params.path));
      return { content: readFileSync(params.path, "utf8") };
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      show("fs/write_text_file", relative(cwd, params.path), quote(params.content));
      writeFileSync(params.path, params.content);
      return {};
    })
    .onNotification("session/update", ({ params, agent }) => {
      const update = params.update;
      const kind = update.sessionUpdate;
      if (["agent_message_chunk", "user_message_chunk", "agent_thought_chunk"].includes(kind)) {
        show("update", kind, quote(update.content.text));
      } else if (kind === "tool_call") {
        show("update", kind, update.toolCallId, update.kind, quote(update.title));
      } else if (kind === "tool_call_update") {
        // An update without a status (the finished preview of an edit) shows as "-".
        show("update", kind, update.toolCallId, update.status ?? "-");
        if (update.toolCallId === state.cancelOn && update.status === "in_progress") {
          show("cancel");
          return agent.notify("session/cancel", { sessionId: params.sessionId });
        }
      } else {
        show("update", kind);
      }
    });
}

async function withAgent(state, op) {
  const child = spawn(binary, ["acp"], { cwd, stdio: ["pipe", "pipe", "inherit"] });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const exited = new Promise((resolve) => child.on("exit", resolve));
  await app(state).connectWith(stream, async (agent) => {
    const info = await agent.request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
      clientInfo: { name: "ts-sdk-client", version: "1" },
    });
    show("initialize", info.protocolVersion, info.agentInfo.name, "loadSession", info.agentCapabilities.loadSession);
    await op(agent);
  });
  child.stdin.end();
  await exited;
}

const state = { cancelOn: null };
let sessionId;
await withAgent(state, async (agent) => {
  const session = await agent.request("session/new", { cwd, mcpServers: [] });
  sessionId = session.sessionId;
  show("session/new", session.modes.availableModes.map((m) => m.id));
  let answer = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit the notes" }] });
  show("prompt", answer.stopReason);
  state.cancelOn = "call_sleep";
  answer = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "wait a while" }] });
  show("prompt", answer.stopReason);
});
show("notes.txt", quote(readFileSync(`${cwd}/notes.txt`, "utf8")));
show("-- second process");
await withAgent({ cancelOn: null }, async (agent) => {
  await agent.request("session/load", { sessionId, cwd, mcpServers: [] });
  show("session/load done");
  const answer = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "still there?" }] });
  show("prompt", answer.stopReason);
});
