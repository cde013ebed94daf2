"use strict";
// For tests in node:test, jest or vitest: `startServer()` runs an `nxlock serve` on a
// free loopback port, and `explore(command)` runs lock code under `nxlock explore
// --exec`. Both run the `nxlock` binary: NXLOCK_BIN, else the one bundled in the
// package for this platform (vendor/<platform>-<arch>/nxlock), else the checkout's
// release build when the package is linked from a checkout, else `nxlock` on PATH.

const { spawn, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");

/**
 * The `nxlock` binary: NXLOCK_BIN, else the one bundled in the package, else (the package
 * linked from a checkout) the checkout's release build, else `nxlock` on PATH.
 */
function binary() {
  if (process.env.NXLOCK_BIN) return process.env.NXLOCK_BIN;
  const candidates = [
    path.join(__dirname, "vendor", `${process.platform}-${process.arch}`, "nxlock"),
    path.join(__dirname, "..", "..", "target", "release", "nxlock"),
  ];
  return candidates.find((candidate) => fs.existsSync(candidate)) || "nxlock";
}

/** NXLOCK.FAULT's arguments for `fault(clientName, kind, { ms, count })`. */
function faultArgs(clientName, kind, { ms, count } = {}) {
  const args = ["NXLOCK.FAULT", clientName, String(kind).toUpperCase()];
  if (String(kind).toLowerCase() === "delay") {
    if (ms === undefined) throw new TypeError("a delay needs ms");
    args.push(Math.trunc(ms));
  } else if (ms !== undefined) {
    throw new TypeError(`a ${kind} fault takes no ms`);
  }
  if (count !== undefined) args.push("COUNT", Math.trunc(count));
  return args;
}

/** One command as RESP2. */
function encode(args) {
  const parts = [`*${args.length}\r\n`];
  for (const arg of args) {
    const data = Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg));
    parts.push(`$${data.length}\r\n`, data, "\r\n");
  }
  return Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p))));
}

/** Parses one reply at `at` of `buffer`: `[value, end]`, or `null` if incomplete. */
function parse(buffer, at = 0) {
  const line = buffer.indexOf("\r\n", at);
  if (line < 0) return null;
  const kind = String.fromCharCode(buffer[at]);
  const rest = buffer.toString("utf8", at + 1, line);
  const next = line + 2;
  if (kind === "+") return [rest, next];
  if (kind === "-") return [new Error(rest), next];
  if (kind === ":") return [Number(rest), next];
  if (kind === "$") {
    const size = Number(rest);
    if (size < 0) return [null, next];
    if (buffer.length < next + size + 2) return null;
    return [buffer.toString("utf8", next, next + size), next + size + 2];
  }
  if (kind === "*") {
    const size = Number(rest);
    if (size < 0) return [null, next];
    const items = [];
    let end = next;
    for (let i = 0; i < size; i++) {
      const item = parse(buffer, end);
      if (!item) return null;
      items.push(item[0]);
      end = item[1];
    }
    return [items, end];
  }
  throw new Error(`unexpected reply ${JSON.stringify(buffer.toString("utf8", at, line))}`);
}

/** A connection that sends one command at a time and resolves its reply. */
function connect(port, host) {
  const socket = net.connect(port, host);
  let buffered = Buffer.alloc(0);
  const waiting = [];
  socket.on("data", (data) => {
    buffered = Buffer.concat([buffered, data]);
    for (;;) {
      const parsed = waiting.length ? parse(buffered) : null;
      if (!parsed) break;
      buffered = buffered.subarray(parsed[1]);
      const { resolve, reject } = waiting.shift();
      if (parsed[0] instanceof Error) reject(parsed[0]);
      else resolve(parsed[0]);
    }
  });
  socket.on("error", (error) => {
    for (const { reject } of waiting.splice(0)) reject(error);
  });
  return {
    command(...args) {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        socket.write(encode(args));
      });
    },
    close() {
      socket.destroy();
    },
  };
}

/**
 * Starts `nxlock serve` on a free loopback port. Resolves to `{ url, command(...args),
 * fastforward(ms), fault(clientName, kind, { ms, count }), clearFaults(clientName?),
 * flush(), stop() }`. `fault` stalls (`"delay"`, `ms` on the server's clock, which
 * `fastforward` moves), crashes (`"disconnect"`) or silences (`"lose-reply"`) the
 * clients of one name (ioredis's `connectionName`): a delay until cleared, the others
 * for one command, unless `count` says how many. Options: `redisVersion` ("7.0", "7.2",
 * "7.4"), `cluster` (answer as a one-node Redis Cluster).
 */
function startServer({ redisVersion, cluster = false } = {}) {
  const args = ["serve", "--port", "0"];
  if (redisVersion) args.push("--redis-version", String(redisVersion));
  if (cluster) args.push("--cluster");
  const child = spawn(binary(), args, { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stderr.on("data", (data) => (err += data));
    child.on("error", (error) =>
      reject(new Error(`nxlock serve did not start (${binary()}): ${error.message}`)),
    );
    child.on("exit", (code) => reject(new Error(`nxlock serve exited ${code}: ${err}`)));
    child.stdout.on("data", (data) => {
      out += data;
      const found = /listening on (redis:\/\/(\S+):(\d+))/.exec(out);
      if (!found) return;
      const [, url, host, port] = found;
      const connection = connect(Number(port), host);
      resolve({
        url,
        command: (...command) => connection.command(...command),
        fastforward: (ms) => connection.command("NXLOCK.FASTFORWARD", Math.trunc(ms)),
        fault: (clientName, kind, options) =>
          connection.command(...faultArgs(clientName, kind, options)),
        clearFaults: (clientName) =>
          clientName === undefined
            ? connection.command("NXLOCK.FAULT", "RESET")
            : connection.command("NXLOCK.FAULT", clientName, "CLEAR"),
        flush: async () => {
          await connection.command("FLUSHALL");
          return connection.command("NXLOCK.FAULT", "RESET");
        },
        stop() {
          connection.close();
          return new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.removeAllListeners("exit");
            child.on("exit", () => done());
            child.kill();
          });
        },
      });
    });
  });
}

/**
 * Runs `command` (a shell command line, once per client) under `nxlock explore --exec`.
 * Resolves to the report (the `--json` object) when the search is clean; rejects with
 * an Error whose message is the shrunk counterexample, its timeline's path and the
 * replay command when it finds a violation of the lock's own, or when nothing was
 * checked. Options: `runs` (200), `clients` (3), `cycles` (4), `seed` (0), `longLived`
 * (true), `faults` (array), `extra` (more arguments).
 */
function explore(
  command,
  { runs = 200, clients = 3, cycles = 4, seed = 0, longLived = true, faults, extra = [] } = {},
) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nxlock-explore-"));
  const saved = path.join(dir, "counterexample.json");
  const html = path.join(dir, "timeline.html");
  const junit = path.join(dir, "explore.xml");
  const args = ["explore", "--exec", command, "--runs", String(runs), "--clients",
    String(clients), "--cycles", String(cycles), "--seed", String(seed), "--json",
    "--save", saved, "--html", html, "--junit", junit];
  if (longLived) args.push("--long-lived");
  if (faults) args.push("--faults", faults.join(","));
  args.push(...extra);
  return new Promise((resolve, reject) => {
    const child = spawn(binary(), args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (data) => (out += data));
    child.stderr.on("data", (data) => (err += data));
    child.on("error", reject);
    child.on("exit", (code) => {
      let report;
      try {
        report = JSON.parse(out);
      } catch {
        return reject(new Error(`nxlock explore answered ${code} without a report:\n${out}${err}`));
      }
      if (code === 0) return resolve(report);
      if (code === 1) {
        const xml = fs.readFileSync(junit, "utf8");
        const failure = /<failure[^>]*>([\s\S]*?)<\/failure>/.exec(xml);
        const shown = failure ? unescapeXml(failure[1]) : JSON.stringify(report.violation);
        return reject(
          new Error(
            `nxlock explore found a violation of the lock's own in ${JSON.stringify(command)}:\n` +
              `${shown}\ntimeline: ${html}\nreplay: nxlock explore --exec ${JSON.stringify(command)} --replay ${saved}`,
          ),
        );
      }
      reject(new Error(`nxlock explore checked nothing (exit ${code}):\n${out}${err}`));
    });
  });
}

function unescapeXml(text) {
  return text
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, "&");
}

/** Whether the binary can be run (for a test that skips without it). */
function available() {
  return spawnSync(binary(), ["--version"], { stdio: "ignore" }).status === 0;
}

module.exports = { available, binary, explore, startServer };
