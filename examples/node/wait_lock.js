// A token lock for a replicated primary: after its SET NX PX it WAITs until every replica
// has the key (NXLOCK_REPLICAS of them), and gives the lock back if they do not within
// half the TTL, since a failover would lose it. Where token_lock.js loses its lock to a
// failover, `nxlock explore --exec "node examples/node/wait_lock.js" --topology replicated
// --faults failover` finds nothing of its own.

const crypto = require("node:crypto");
const { REPLICAS, TTL_MS, runCycles, sleep } = require("./markers");

const RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
`;

const release = (r, key, token) => r.eval(RELEASE, 1, key, token);

// SET NX PX with a fresh token, kept only once every replica has it: the token, and until
// when the lock is valid (Date.now()), counted from before the SET.
async function acquire(r, key) {
  const token = crypto.randomUUID();
  for (;;) {
    const started = Date.now();
    if (await r.set(key, token, "PX", TTL_MS, "NX")) {
      if ((await r.call("WAIT", REPLICAS, Math.floor(TTL_MS / 2))) >= REPLICAS) {
        return { token, validUntil: started + TTL_MS };
      }
      await release(r, key, token);
    }
    await sleep(5);
  }
}

runCycles("lock:resource", release, acquire);
