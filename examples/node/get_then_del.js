// A lock whose release GETs, compares, then DELs. Between the two commands the key can
// expire and pass to another client, whose lock the DEL then deletes:
// `nxlock explore --exec "node examples/node/get_then_del.js"` finds it.

const { runCycles } = require("./markers");

runCycles("lock:resource", async (r, key, token) => {
  // The bug: check, then act, in two commands.
  if ((await r.get(key)) === token) await r.del(key);
});
