#!/usr/bin/env python3
"""Writes the *sends* of the protocol scenarios for the three client profiles (plain, zed, jetbrains).

Authoring aid only: the committed .jsonl files are the contract. After running this, record the agent's frames
with `PROTOCOL_RECORD=1 cargo test --test all protocol::` (see README.md) and review the diff. Lines that answer an
agent request (fs, terminals, permission asks, elicitations) depend on the profile and are written here per profile.
"""
import json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILES = {
    "plain": {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "plain", "version": "1"}},
    "zed": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True, "auth": {"terminal": True}, "session": {"configOptions": {"boolean": {}}}, "elicitation": {"form": {}, "url": {}}, "_meta": {"terminal_output": True, "terminal-auth": True}}, "clientInfo": {"name": "zed", "title": "Zed", "version": "1.0.0"}},
    "jetbrains": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}, "clientInfo": {"name": "JetBrains", "title": "JetBrains AI Assistant", "version": "2025.3"}},
}
FS = {"zed", "jetbrains"}


class S:
    def __init__(self, profile):
        self.profile, self.lines, self.next_id, self.models = profile, [], 1, []

    def add(self, **line):
        self.lines.append(line)

    def send(self, method, params=None, notify=False, **extra):
        frame = {"jsonrpc": "2.0", "method": method}
        if not notify:
            frame["id"] = self.next_id
            self.next_id += 1
        if params is not None:
            frame["params"] = params
        self.add(send=frame, **extra)

    def answer(self, name, result):
        self.add(send={"jsonrpc": "2.0", "id": "{%s}" % name, "result": result})

    def start(self, session=True):
        self.send("initialize", PROFILES[self.profile])
        if session:
            self.send("session/new", {"cwd": "{cwd}", "mcpServers": []})

    def prompt(self, text, session="session", **extra):
        self.send("session/prompt", {"sessionId": "{%s}" % session, "prompt": [{"type": "text", "text": text}]}, **extra)

    def fs_read(self, name, content):
        if self.profile in FS:
            self.answer(name, {"content": content})

    def fs_write(self, name):
        if self.profile in FS:
            self.answer(name, {})

    def ask(self, name, option):
        self.answer(name, {"outcome": {"outcome": "selected", "optionId": option}})

    def text(self):
        out = []
        if self.models:
            out.append(json.dumps({"model": self.models}))
        for line in self.lines:
            out.append(json.dumps(line))
        return "\n".join(out) + "\n"


def call(id_, name, args):
    return {"sse": [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}, "finish_reason": "tool_calls"}]}]}


def say(text):
    return {"sse": [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}]}


def hang():
    return {"hang": [{"choices": [{"index": 0, "delta": {"content": "Thinking"}}]}]}


GREET = "fn greet() {\n    println!(\"hi\");\n}\n"


def edit_turn(s, option, twice=False):
    s.add(files={"src/greet.rs": GREET})
    s.models = [call("call_read", "read", {"file_path": "{cwd}/src/greet.rs"}), call("call_edit", "edit", {"file_path": "{cwd}/src/greet.rs", "old_string": "\"hi\"", "new_string": "\"hello\""})]
    s.start()
    s.prompt("say hello")
    s.fs_read("r0", GREET)
    s.fs_read("r1", GREET)
    s.ask("ask", option)
    after = GREET.replace("hi", "hello")
    if option.startswith("allow"):
        s.fs_read("r2", GREET)
        s.fs_write("w1")
    s.models.append(say("Done."))
    if twice:
        s.models += [call("call_edit2", "edit", {"file_path": "{cwd}/src/greet.rs", "old_string": "\"hello\"", "new_string": "\"hey\""}), say("Again.")]
        s.prompt("say hey")
        s.fs_read("r3", after)
        if option == "allow_always":
            s.fs_read("r4", after)
            s.fs_write("w2")
        else:
            pass  # reject_always: refused without asking


def bash_turn(s, option, twice=False):
    s.models = [call("call_sh", "bash", {"command": "touch made.txt", "description": "Make a file"})]
    s.start()
    s.prompt("run echo")
    s.ask("ask", option)
    s.models.append(say("Ran it." if option.startswith("allow") else "Skipped."))
    if twice:
        s.models += [call("call_sh2", "bash", {"command": "touch made2.txt", "description": "Make another"}), say("Again.")]
        s.prompt("again")


def scenarios(profile):
    out = {}

    s = S(profile)
    s.models = [{"sse": [{"choices": [{"index": 0, "delta": {"reasoning_content": "Greeting."}}]}, {"choices": [{"index": 0, "delta": {"content": "Hello"}}]}, {"choices": [{"index": 0, "delta": {"content": " there."}, "finish_reason": "stop"}]}]}]
    s.start()
    s.prompt("hi")
    out["text_turn"] = s

    s = S(profile)
    s.add(files={"src/lib.rs": "pub fn answer() -> u32 {\n    42\n}\n"})
    s.models = [call("call_read", "read", {"file_path": "{cwd}/src/lib.rs"}), say("It returns 42.")]
    s.start()
    s.prompt("what does answer return?")
    s.fs_read("r1", "pub fn answer() -> u32 {\n    42\n}\n")
    out["read_turn"] = s

    for option in ["allow_once", "reject_once"]:
        s = S(profile)
        edit_turn(s, option)
        out["edit_" + option] = s
        s = S(profile)
        bash_turn(s, option)
        out["bash_" + option] = s
    for option in ["allow_always", "reject_always"]:
        s = S(profile)
        edit_turn(s, option, twice=True)
        out["edit_" + option] = s
        s = S(profile)
        bash_turn(s, option, twice=True)
        out["bash_" + option] = s

    s = S(profile)
    s.models = [call("call_sleep", "bash", {"command": "sleep 30", "description": "Wait"})]
    s.start()
    s.prompt("wait a while")
    s.ask("ask", "allow_once")
    s.send("session/cancel", {"sessionId": "{session}"}, notify=True, after={"toolCallId": "call_sleep", "status": "in_progress"})
    out["cancel_mid_tool"] = s

    s = S(profile)
    s.models = [call("call_sleep", "bash", {"command": "sleep 30", "description": "Wait"})]
    s.start()
    s.prompt("wait a while")
    s.send("session/cancel", {"sessionId": "{session}"}, notify=True, after={"method": "session/request_permission"})
    out["cancel_while_asking"] = s

    s = S(profile)
    s.add(files={"notes.txt": "alpha\n"})
    s.models = [call("call_read", "read", {"file_path": "{cwd}/notes.txt"}), say("It says alpha.")]
    s.start()
    s.prompt("read the notes")
    s.fs_read("r1", "alpha\n")
    s.send("session/load", {"sessionId": "{session}", "cwd": "{cwd}", "mcpServers": []})
    s.send("session/load", {"sessionId": "{session}", "cwd": "/", "mcpServers": []})
    out["load_with_replay"] = s

    s = S(profile)
    n = 51 if profile == "plain" else 2
    s.models = [say("Answer %d." % i) for i in range(n)]
    s.send("initialize", PROFILES[profile])
    for i in range(n):
        name = "session" if i == 0 else "session%d" % (i + 1)
        s.send("session/new", {"cwd": "{cwd}", "mcpServers": []})
        s.prompt("question %d" % i, session=name)
    s.send("session/new", {"cwd": "{cwd}", "mcpServers": []})
    s.send("session/list", {})
    if n > 50:
        s.send("session/list", {"cursor": "{cursor}"})
    s.send("session/list", {"cwd": "/nowhere"})
    s.send("session/list", {"cursor": "not-a-cursor"})
    out["list_and_paging"] = s

    s = S(profile)
    s.models = [say("First."), say("Second.")]
    s.start()
    s.prompt("first")
    s.send("session/resume", {"sessionId": "{session}", "cwd": "{cwd}", "mcpServers": []})
    s.prompt("second")
    s.send("session/close", {"sessionId": "{session}"})
    s.send("session/resume", {"sessionId": "{session}", "cwd": "{cwd}", "mcpServers": []})
    s.send("session/delete", {"sessionId": "{session}"})
    s.send("session/resume", {"sessionId": "{session}", "cwd": "{cwd}", "mcpServers": []})
    s.send("session/close", {"sessionId": "{session}"})
    out["resume_close_delete"] = s

    s = S(profile)
    s.models = [call("call_sleep", "bash", {"command": "sleep 30", "description": "Wait"})]
    s.start()
    s.prompt("wait a while")
    s.ask("ask", "allow_once")
    s.send("session/close", {"sessionId": "{session}"}, after={"toolCallId": "call_sleep", "status": "in_progress"}, any_order=True)
    out["close_mid_turn"] = s

    s = S(profile)
    s.start()
    s.send("session/set_config_option", {"sessionId": "{session}", "configId": "mode", "value": "plan"})
    s.send("session/set_config_option", {"sessionId": "{session}", "configId": "model", "value": "fake-model"})
    s.send("session/set_mode", {"sessionId": "{session}", "modeId": "accept-edits"})
    s.send("session/set_config_option", {"sessionId": "{session}", "configId": "colour", "value": "red"})
    s.send("session/set_config_option", {"sessionId": "{session}", "configId": "mode", "value": "reckless"})
    s.send("session/set_mode", {"sessionId": "{session}", "modeId": "reckless"})
    out["set_mode_and_model"] = s

    s = S(profile)
    s.models = [call("call_sh", "bash", {"command": "touch made.txt", "description": "Make a file"}), say("Ran it.")]
    s.start()
    s.prompt("/permissions")
    s.prompt("run echo")
    s.ask("ask", "allow_always")
    s.prompt("/permissions")
    s.prompt("/permissions revoke 1")
    s.prompt("/permissions clear")
    s.models.append(say("Summary: the user ran a command that made a file."))
    s.prompt("/compact")
    out["slash_commands"] = s

    s = S(profile)
    s.models = [call("call_q", "question", {"question": "Which colour?", "options": ["red", "blue"]}), say("Blue it is.")]
    s.start()
    s.prompt("pick a colour")
    if profile == "zed":
        s.answer("ask", {"action": "accept", "content": {"answer": "blue"}})
    else:
        s.ask("ask", "choice_1")
    out["question_choice"] = s

    s = S(profile)
    s.models = [call("call_q", "question", {"question": "What name?"})]
    s.start()
    s.prompt("name it")
    if profile == "zed":
        s.answer("ask", {"action": "decline"})
        s.models.append(say("Fine, no name."))
    out["question_free_text"] = s

    s = S(profile)
    s.models = [{"status": 401, "body": {"error": {"message": "bad key", "type": "invalid_request_error"}}}, say("Back.")]
    s.start()
    s.prompt("hello")
    s.prompt("again")
    out["model_error"] = s

    if profile == "jetbrains":
        s = S(profile)
        s.add(config="[shell]\nclient_terminals = true\n")
        s.models = [call("call_sh", "bash", {"command": "touch made.txt", "description": "Make a file"}), say("Ran it.")]
        s.start()
        s.prompt("run echo")
        s.ask("ask", "allow_once")
        s.answer("t1", {"terminalId": "term-1"})
        s.answer("t2", {"exitCode": 0, "signal": None})
        s.answer("t3", {"output": "hi\n", "truncated": False, "exitStatus": {"exitCode": 0, "signal": None}})
        s.answer("t4", {})
        out["client_terminal"] = s
    return out


def main():
    only = sys.argv[1:]
    for profile in PROFILES:
        for name, s in scenarios(profile).items():
            if only and f"{profile}/{name}" not in only:
                continue
            path = os.path.join(HERE, "scenarios", profile, name + ".jsonl")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(s.text())


if __name__ == "__main__":
    main()
