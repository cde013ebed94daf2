// A lock whose release GETs, compares, then DELs. Between the two commands the key can
// expire and pass to another client, whose lock the DEL then deletes:
// `nxlock explore --exec "node examples/node/get_then_del.js"` finds it.

const crypto = require("node:crypto");
const { CYCLES, TTL_MS, connect, mark, sleep } = require("./markers");

const KEY = "lock:resource";

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
      // The bug: check, then act, in two commands.
      if ((await r.get(KEY)) === token) await r.del(KEY);
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
