// What the examples share: who this process is, and the markers that tell an exploring
// nxlock serve what it does. Against a plain `nxlock serve` the markers are accepted and
// ignored; against Redis, set NXLOCK_MARKERS=0 and they are not sent.

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

module.exports = { CLIENT, CYCLES, TTL_MS, connect, mark, sleep };
