// A lock whose release GETs, compares, then DELs. Between the two commands the key can
// expire and pass to another client, whose lock the DEL then deletes:
// `nxlock explore --exec "node examples/node/get_then_del.js"` finds it.

const { KEY, acquire, cycles, hold } = require("./cycle");

cycles(async (r, marks, run) => {
  const { token, deadline } = await acquire(r, run);
  await hold(marks, run, token, deadline);
  // The bug: check, then act, in two commands.
  if ((await r.get(KEY)) === token) await r.del(KEY);
});
