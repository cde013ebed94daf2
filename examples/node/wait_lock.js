// A token lock for a replicated primary: after its SET NX PX it WAITs until every replica
// has the key (NXLOCK_REPLICAS of them), and gives the lock back if they do not within
// half the TTL, since a failover would lose it. Where token_lock.js loses its lock to a
// failover, `nxlock explore --exec "node examples/node/wait_lock.js" --topology replicated
// --faults failover` finds nothing of its own.

const crypto = require("node:crypto");
const nxlock = require("nxlock");
const { KEY, cycles, hold, release, sleep } = require("./cycle");

// SET NX PX with a fresh token, kept only once every replica has it: the token, and the
// deadline, counted from before the SET.
async function acquire(r, run) {
  const token = crypto.randomUUID();
  for (;;) {
    const started = nxlock.monotonic();
    if (await r.set(KEY, token, "PX", run.ttlMs, "NX")) {
      if ((await r.call("WAIT", run.replicas, Math.floor(run.ttlMs / 2))) >= run.replicas) {
        return { token, deadline: nxlock.deadline(run.ttlMs, started) };
      }
      await release(r, token);
    }
    await sleep(5);
  }
}

cycles(async (r, marks, run) => {
  const { token, deadline } = await acquire(r, run);
  await hold(marks, run, token, deadline);
  await release(r, token);
});
