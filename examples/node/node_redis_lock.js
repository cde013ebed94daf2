// token_lock.js with node-redis (the `redis` package) instead of ioredis: the helpers
// send markers through its sendCommand.

const crypto = require("node:crypto");
const { createClient } = require("redis");
const nxlock = require("nxlock");
const { KEY, RELEASE, sleep } = require("./cycle");

// No reconnects and no queue, so that a lost reply is seen as one. Connecting sends
// commands, which a fault may refuse: a few tries, as a service would make.
async function connect(run) {
  for (let attempt = 1; ; attempt++) {
    const r = createClient({
      url: run.url,
      disableOfflineQueue: true,
      socket: { reconnectStrategy: false },
    });
    r.on("error", () => {});
    try {
      await r.connect();
      return r;
    } catch (error) {
      await r.disconnect().catch(() => {});
      if (attempt === 5) throw error;
      await sleep(10);
    }
  }
}

async function acquire(r, run) {
  const token = crypto.randomUUID();
  for (;;) {
    const started = nxlock.monotonic();
    if (await r.set(KEY, token, { NX: true, PX: run.ttlMs })) {
      return { token, deadline: nxlock.deadline(run.ttlMs, started) };
    }
    await sleep(5);
  }
}

(async () => {
  for await (const run of nxlock.runs()) {
    let r = await connect(run);
    for (let i = 0; i < run.cycles; i++) {
      try {
        const { token, deadline } = await acquire(r, run);
        await nxlock.markers(r).section("resource", { deadline, holds: [KEY, token] }, () =>
          sleep(run.ttlMs / 10),
        );
        await r.eval(RELEASE, { keys: [KEY], arguments: [token] });
        await sleep(run.ttlMs / 10);
      } catch (error) {
        await r.disconnect().catch(() => {});
        r = await connect(run);
      }
    }
    await r.disconnect().catch(() => {});
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
