// Helpers for lock code explored by `nxlock explore --exec`: the run loop, the markers,
// and deadlines on the host's monotonic clock. See README.md.

"use strict";

const readline = require("node:readline");

/** The host's monotonic clock in milliseconds: process.hrtime reads CLOCK_MONOTONIC, the
 * clock the explorer reads a deadline against. */
function monotonic() {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Where a validity of `ms` milliseconds ends on the monotonic clock, counted from
 * `start` (default: now). Take `start` before the command that acquired the lock. */
function deadline(ms, start = monotonic()) {
  return start + ms;
}

/** A monotonic instant as MONOTONIC takes it: 3 decimals, rounded down (a deadline is
 * never stated later than it is). */
function monotonicText(at) {
  return (Math.floor(at * 1000) / 1000).toFixed(3);
}

function runFrom(env, fields = {}) {
  const all = { ...env, ...fields };
  const url = all.REDIS_URL || "redis://127.0.0.1:6379";
  return {
    client: Number(all.NXLOCK_CLIENT || 0),
    clients: Number(all.NXLOCK_CLIENTS || 1),
    url,
    nodes: (all.NXLOCK_NODES || url).split(",").filter(Boolean),
    cycles: Number(all.NXLOCK_CYCLES || 4),
    ttlMs: Number(all.NXLOCK_TTL_MS || 200),
    replicas: Number(all.NXLOCK_REPLICAS || 0),
  };
}

/** Each run this process serves: one (from the environment), or, with `--long-lived`
 * (NXLOCK_LONG_LIVED=1), one per line on stdin, `ended` being written on stdout once the
 * loop's body is done with each. Close your connections before the next. */
async function* runs() {
  if (process.env.NXLOCK_LONG_LIVED !== "1") {
    yield runFrom(process.env);
    return;
  }
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const fields = Object.fromEntries(
      line.trim().split(/\s+/).filter((f) => f.includes("=")).map((f) => f.split(/=(.*)/s, 2)),
    );
    yield runFrom(process.env, fields);
    process.stdout.write("ended\n");
  }
}

/** A validity's words: MONOTONIC for a deadline, PX for milliseconds from now. */
function validity({ deadline: at, px } = {}) {
  if (at !== undefined && at !== null) return ["MONOTONIC", monotonicText(at)];
  if (px !== undefined && px !== null) return ["PX", String(Math.max(Math.floor(px), 0))];
  return [];
}

/** How one client library sends a raw command: ioredis's `call`, node-redis's
 * `sendCommand`. */
function sender(client) {
  if (client && typeof client.call === "function") return (args) => client.call(...args);
  if (client && typeof client.sendCommand === "function") return (args) => client.sendCommand(args);
  throw new TypeError("nxlock.markers: a client with call() (ioredis) or sendCommand() (node-redis)");
}

class Markers {
  constructor(client, { enabled } = {}) {
    this.client = client;
    this.enabled = enabled === undefined ? process.env.NXLOCK_MARKERS !== "0" : enabled;
    this.send_ = sender(client);
    this.warned = false;
  }

  /** Sends one marker now, in order with the client's other commands: a promise of its
   * reply (null when markers are off), which never rejects. */
  send(...args) {
    if (!this.enabled) return Promise.resolve(null);
    const words = args.map(String);
    let sent;
    try {
      sent = Promise.resolve(this.send_(words));
    } catch (error) {
      sent = Promise.reject(error);
    }
    return sent.catch((error) => {
      const text = String((error && error.message) || error);
      if (/unknown command/i.test(text)) {
        // A server that is not nxlock serve: no markers from here on.
        this.enabled = false;
        return null;
      }
      if (text.startsWith("STALE")) return { stale: text };
      if (!this.warned) {
        this.warned = true;
        process.stderr.write(`nxlock: a marker could not be sent (${words[0]}): ${text}\n`);
      }
      return { error: text };
    });
  }

  /** The lock key `key` holds this client's `token` now. */
  holds(key, token) {
    return this.send("NXLOCK.HOLDS", key, token);
  }

  /** Enters `resource`, the lock valid until `deadline` (monotonic ms; or `px` ms from
   * now), with `fence` for a fenced resource. A second enter before the exit re-states
   * the section; it does not nest. */
  enter(resource, { deadline: at, px, fence } = {}) {
    const words = ["NXLOCK.ENTER", resource, ...validity({ deadline: at, px })];
    if (fence !== undefined && fence !== null) words.push("FENCE", String(fence));
    return this.send(...words);
  }

  /** The lock on `resource` was extended: valid until `deadline` now. */
  extend(resource, { deadline: at, px } = {}) {
    const words = validity({ deadline: at, px });
    if (!words.length) throw new TypeError("nxlock: an extend needs a deadline (or px)");
    return this.send("NXLOCK.EXTEND", resource, ...words);
  }

  /** Leaves `resource`. */
  exit(resource) {
    return this.send("NXLOCK.EXIT", resource);
  }

  /** A write to the fenced `resource`: a promise of whether the resource took it. */
  async write(resource, fence) {
    const reply = await this.send("NXLOCK.WRITE", resource, String(fence));
    return !(reply && reply.stale);
  }

  /** Keys starting with `prefix` are kept without a TTL by design (a fence counter). */
  permanent(prefix) {
    return this.send("NXLOCK.PERMANENT", prefix);
  }

  /** The counter `counter` is kept in the key `key`. */
  counterKey(counter, key) {
    return this.send("NXLOCK.COUNTER", counter, key);
  }

  /** A critical section: HOLDS (with `holds: [key, token]`), ENTER, `body(section)`, and
   * EXIT however the body ends; the body's result. */
  async section(resource, options, body) {
    const { holds, ...enter } = options || {};
    if (holds) this.holds(holds[0], holds[1]);
    this.enter(resource, enter);
    const section = {
      extend: (at) => this.extend(resource, at),
      write: (fence) => this.write(resource, fence),
    };
    try {
      return await body(section);
    } finally {
      await this.exit(resource);
    }
  }

  /** One increment of `counter`, begun now: `done()` once it was applied, `failed()`
   * once it surely was not; neither leaves its outcome unknown. */
  increment(counter) {
    this.send("NXLOCK.INCR", counter);
    let settled = false;
    return {
      done: () => (settled ? Promise.resolve(null) : ((settled = true), this.send("NXLOCK.DONE"))),
      failed: () => (settled ? Promise.resolve(null) : ((settled = true), this.send("NXLOCK.FAILED"))),
    };
  }
}

/** The markers of one client (ioredis or node-redis), sent on its connection. */
function markers(client, options) {
  return new Markers(client, options);
}

// For tests: a server to point a client at, and the explorer run from a test.
const { explore, startServer } = require("./testing");

module.exports = { Markers, deadline, explore, markers, monotonic, runs, startServer };
