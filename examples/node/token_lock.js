// A correct token lock: SET NX PX with a random token, and a release that deletes the key
// only if it still holds the token, in one script. Its validity is counted from before
// the SET. `nxlock explore --exec "node examples/node/token_lock.js"` finds nothing of
// its own.

const crypto = require("node:crypto");
const { CYCLES, TTL_MS, connect, mark, sleep } = require("./markers");

const KEY = "lock:resource";
const RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
`;

async function main() {
  let r = await connect();
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    try {
      const token = crypto.randomUUID();
      let started;
      for (;;) {
        started = Date.now();
        if (await r.set(KEY, token, "PX", TTL_MS, "NX")) break;
        await sleep(5);
      }
      const validMs = TTL_MS - (Date.now() - started);
      await mark(r, "NXLOCK.HOLDS", KEY, token);
      await mark(r, "NXLOCK.ENTER", "resource", "PX", Math.max(validMs, 0));
      await sleep(TTL_MS / 10);
      await mark(r, "NXLOCK.EXIT", "resource");
      await r.eval(RELEASE, 1, KEY, token);
    } catch (error) {
      r.disconnect();
      r = await connect();
    }
  }
  r.disconnect();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
