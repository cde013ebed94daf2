// What the examples share: who this process is, the markers that tell an exploring
// nxlock serve what it does, and a cycle around an acquire by SET NX PX. Against a plain
// `nxlock serve` the markers are accepted and ignored; against Redis, set
// NXLOCK_MARKERS=0 and they are not sent.
//
// Under `nxlock explore --exec ... --long-lived` the process serves run after run:
// `eachRun()` reads each run's addresses from stdin and says `ended` on stdout.

const crypto = require("node:crypto");
const readline = require("node:readline");
const Redis = require("ioredis");

const CLIENT = Number(process.env.NXLOCK_CLIENT || 0);
const CYCLES = Number(process.env.NXLOCK_CYCLES || 4);
const TTL_MS = Number(process.env.NXLOCK_TTL_MS || 200);
const MARKERS = process.env.NXLOCK_MARKERS !== "0";
// Where this run's clients connect: REDIS_URL, and every node's (Redlock) in NXLOCK_NODES.
const run = {
  url: process.env.REDIS_URL || "redis://127.0.0.1:6379",
  nodes: (process.env.NXLOCK_NODES || process.env.REDIS_URL || "redis://127.0.0.1:6379").split(","),
};

// Yields once per run: once, or (NXLOCK_LONG_LIVED=1) once per line on stdin, which
// gives the run's REDIS_URL and NXLOCK_NODES; `ended` on stdout after each.
async function* eachRun() {
  if (process.env.NXLOCK_LONG_LIVED !== "1") {
    yield run;
    return;
  }
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const fields = Object.fromEntries(line.trim().split(/\s+/).map((f) => f.split(/=(.*)/s, 2)));
    run.url = fields.REDIS_URL;
    run.nodes = (fields.NXLOCK_NODES || fields.REDIS_URL).split(",");
    yield run;
    console.log("ended");
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// No reconnects and no queue: a command resent after a lost reply would be a second
// command the explorer did not see the client decide to send.
// Connecting sends commands too (ioredis's ready check), which a fault may refuse: a
// few tries, as a service would make.
async function connect(url = run.url, options = {}) {
  for (let attempt = 1; ; attempt++) {
    const r = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
      ...options,
    });
    r.on("error", () => {});
    try {
      await r.connect();
      return r;
    } catch (error) {
      close(r);
      if (attempt === 5) throw error;
      await sleep(10);
    }
  }
}

// Closes a client; one whose connection already ended is left alone (disconnecting it
// would arm ioredis's 2 s disconnect timer, which keeps the process alive).
function close(r) {
  if (r.status !== "end") r.disconnect();
}

async function mark(r, ...args) {
  if (MARKERS) await r.call(...args);
}

// SET NX PX with a fresh token, tried every 5 ms: the token, and until when the lock is
// valid (Date.now()), counted from before the SET that took it.
async function acquire(r, key) {
  const token = crypto.randomUUID();
  for (;;) {
    const started = Date.now();
    if (await r.set(key, token, "PX", TTL_MS, "NX")) {
      return { token, validUntil: started + TTL_MS };
    }
    await sleep(5);
  }
}

// Says the key holds the token, enters the resource for the validity left, works a
// tenth of the TTL, and leaves. The validity left is reckoned after HOLDS, whose
// connection (and its handshake's commands) may have waited.
async function criticalSection(r, key, token, validUntil) {
  await mark(r, "NXLOCK.HOLDS", key, token);
  await mark(r, "NXLOCK.ENTER", "resource", "PX", Math.max(validUntil - Date.now(), 0));
  await sleep(TTL_MS / 10);
  await mark(r, "NXLOCK.EXIT", "resource");
}

// Work outside the lock, a tenth of the TTL: without it the releasing client wins its
// next acquire at once, and the others starve until it is done.
const outsideWork = () => sleep(TTL_MS / 10);

// Runs `main()` once per run; a process whose run throws fails.
function eachRunOf(main) {
  (async () => {
    for await (const _ of eachRun()) await main();
  })().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

// For each run, CYCLES cycles of `acquire(r, key)`, critical section,
// `release(r, key, token)` and work outside the lock; an error ends the cycle, and the
// next one connects again (with `connectTo()`). A process that cannot connect fails.
function runCycles(key, release, acquireLock = acquire, connectTo = connect) {
  eachRunOf(async () => {
    let r = await connectTo();
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      try {
        const { token, validUntil } = await acquireLock(r, key);
        await criticalSection(r, key, token, validUntil);
        await release(r, key, token);
        await outsideWork();
      } catch (error) {
        close(r);
        r = await connectTo();
      }
    }
    close(r);
  });
}

module.exports = {
  CLIENT,
  CYCLES,
  TTL_MS,
  REPLICAS: Number(process.env.NXLOCK_REPLICAS || 0),
  run,
  connect,
  close,
  mark,
  sleep,
  criticalSection,
  outsideWork,
  eachRunOf,
  runCycles,
};
