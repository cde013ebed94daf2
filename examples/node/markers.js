// What the examples share: who this process is, the markers that tell an exploring
// nxlock serve what it does, and a cycle around an acquire by SET NX PX. Against a plain `nxlock serve` the markers are accepted and
// ignored; against Redis, set NXLOCK_MARKERS=0 and they are not sent.

const crypto = require("node:crypto");
const Redis = require("ioredis");

const CLIENT = Number(process.env.NXLOCK_CLIENT || 0);
const CYCLES = Number(process.env.NXLOCK_CYCLES || 4);
const TTL_MS = Number(process.env.NXLOCK_TTL_MS || 200);
const URL = process.env.REDIS_URL || "redis://127.0.0.1:6379";
const MARKERS = process.env.NXLOCK_MARKERS !== "0";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// No reconnects and no queue: a command resent after a lost reply would be a second
// command the explorer did not see the client decide to send.
// Connecting sends commands too (ioredis's ready check), which a fault may refuse: a
// few tries, as a service would make.
async function connect() {
  for (let attempt = 1; ; attempt++) {
    const r = new Redis(URL, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    r.on("error", () => {});
    try {
      await r.connect();
      return r;
    } catch (error) {
      r.disconnect();
      if (attempt === 5) throw error;
      await sleep(10);
    }
  }
}

async function mark(r, ...args) {
  if (MARKERS) await r.call(...args);
}

// SET NX PX with a fresh token, tried every 5 ms: the token, and the validity left (ms),
// counted from before the SET that took the lock.
async function acquire(r, key) {
  const token = crypto.randomUUID();
  for (;;) {
    const started = Date.now();
    if (await r.set(key, token, "PX", TTL_MS, "NX")) {
      return { token, validMs: TTL_MS - (Date.now() - started) };
    }
    await sleep(5);
  }
}

// Says the key holds the token, enters the resource for the validity left, works a
// tenth of the TTL, and leaves.
async function criticalSection(r, key, token, validMs) {
  await mark(r, "NXLOCK.HOLDS", key, token);
  await mark(r, "NXLOCK.ENTER", "resource", "PX", Math.max(validMs, 0));
  await sleep(TTL_MS / 10);
  await mark(r, "NXLOCK.EXIT", "resource");
}

// CYCLES cycles of acquire, critical section and `release(r, key, token)`; an error ends
// the cycle, and the next one connects again. A process that cannot connect fails.
function runCycles(key, release) {
  const main = async () => {
    let r = await connect();
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      try {
        const { token, validMs } = await acquire(r, key);
        await criticalSection(r, key, token, validMs);
        await release(r, key, token);
      } catch (error) {
        r.disconnect();
        r = await connect();
      }
    }
    r.disconnect();
  };
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

module.exports = { CLIENT, CYCLES, TTL_MS, connect, mark, sleep, runCycles };
