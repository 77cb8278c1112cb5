#!/usr/bin/env node
// The `tinycode` command of the npm package @tinycode/acp: starts the native binary that npm installed for this
// platform (the optional dependency @tinycode/acp-<os>-<arch>) with the same arguments and stdio, so an editor
// talking ACP on stdin/stdout talks to the binary directly. Signals are passed on; the exit code is the binary's.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");

const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"];

function fail(message) {
  process.stderr.write(`tinycode: ${message}\n`);
  process.exit(1);
}

function binary() {
  if (process.env.TINYCODE_BINARY) {
    return process.env.TINYCODE_BINARY;
  }
  const platform = `${process.platform}-${process.arch}`;
  if (!PLATFORMS.includes(platform)) {
    fail(`there is no build for ${platform}: tinycode supports Linux and macOS on x64 and arm64 (Windows is not supported yet)`);
  }
  const name = `@tinycode/acp-${platform}`;
  let path;
  try {
    path = require.resolve(`${name}/bin/tinycode`);
  } catch {
    fail(`the package ${name} is not installed; reinstall @tinycode/acp without --omit=optional (or set TINYCODE_BINARY)`);
  }
  try {
    fs.accessSync(path, fs.constants.X_OK);
  } catch {
    fs.chmodSync(path, 0o755);
  }
  return path;
}

const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => fail(`cannot start the binary: ${error.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code === null ? 1 : code);
  }
});
