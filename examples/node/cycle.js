// What the examples share, built on the nxlock helpers (`npm install ./clients/node`): a
// connection that never resends by itself, an acquire by SET NX PX that counts its
// validity from before the SET, a critical section marked as such, and the loop over
// runs and cycles. Against a plain `nxlock serve` the markers are accepted and ignored;
// against Redis they turn themselves off.

const crypto = require("node:crypto");
const Redis = require("ioredis");
const nxlock = require("nxlock");

const KEY = "lock:resource";
const RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
`;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// No reconnects and no queue: a command resent after a lost reply would be a second
// command the explorer did not see the client decide to send. Connecting sends commands
// too (ioredis's ready check), which a fault may refuse: a few tries, as a service would
// make.
async function connect(url, options = {}) {
  for (let attempt = 1; ; attempt++) {
    const r = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
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

// A Redlock node's client: it gives up on a command after a fifth of the TTL, connects
// again after a dropped connection (a node that died and restarted), and never sends a
// command twice.
function nodeClient(url, run) {
  return new Redis(url, {
    commandTimeout: run.ttlMs / 5,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: () => 5,
  }).on("error", () => {});
}

// SET NX PX with a fresh token, tried every 5 ms: the token, and the lock's deadline on
// the monotonic clock, counted from before the SET that took it.
async function acquire(r, run, key = KEY) {
  const token = crypto.randomUUID();
  for (;;) {
    const started = nxlock.monotonic();
    if (await r.set(key, token, "PX", run.ttlMs, "NX")) {
      return { token, deadline: nxlock.deadline(run.ttlMs, started) };
    }
    await sleep(5);
  }
}

// A tenth of the TTL of work: inside the lock, and outside it after each release
// (without that, the client that releases wins its next acquire at once).
const work = (run) => sleep(run.ttlMs / 10);

// The critical section: the key holds the token, the resource is ours until the
// deadline, and a tenth of the TTL of work is done there.
function hold(marks, run, token, deadline, key = KEY) {
  return marks.section("resource", { deadline, holds: [key, token] }, () => work(run));
}

// A fenced critical section: entered with the fence, a write of what the work reads, a
// tenth of the TTL of work, and a write of its result (a strict resource takes one write
// per fence, and refuses the second: no violation).
function holdFenced(marks, run, token, fence, deadline, key) {
  return marks.section("orders", { deadline, fence, holds: [key, token] }, async (section) => {
    await section.write(fence);
    await work(run);
    await section.write(fence);
  });
}

// The correct release: delete the key only if it still holds our token, in one script.
const release = (r, token, key = KEY) => r.eval(RELEASE, 1, key, token);

// For each run: connect, then `run.cycles` times `cycle(r, marks, run)` and some work
// outside the lock. An error ends the cycle; the next connects again. A process whose
// run throws fails.
function cycles(cycle, connectTo = (run) => connect(run.url)) {
  (async () => {
    for await (const run of nxlock.runs()) {
      let r = await connectTo(run);
      for (let i = 0; i < run.cycles; i++) {
        try {
          await cycle(r, nxlock.markers(r), run);
          await work(run);
        } catch (error) {
          close(r);
          r = await connectTo(run);
        }
      }
      close(r);
    }
  })().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

module.exports = {
  KEY,
  RELEASE,
  acquire,
  close,
  connect,
  cycles,
  hold,
  holdFenced,
  nodeClient,
  release,
  sleep,
  work,
};
