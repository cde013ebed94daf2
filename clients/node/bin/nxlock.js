#!/usr/bin/env node
"use strict";
// The package's `nxlock` command (npm links it into node_modules/.bin, so `npx nxlock`
// runs it): the binary bundled for this platform, or NXLOCK_BIN, with every argument,
// the terminal and the exit status passed through.

const { spawnSync } = require("node:child_process");
const { binary } = require("../testing");

const done = spawnSync(binary(), process.argv.slice(2), { stdio: "inherit" });
if (done.error) {
  console.error(`nxlock: cannot run ${binary()}: ${done.error.message}`);
  process.exit(2);
}
if (done.signal) process.kill(process.pid, done.signal);
process.exit(done.status ?? 2);
