// A correct token lock: SET NX PX with a random token, validity counted from before the
// SET, and a release that deletes the key only if it still holds the token, in one
// script. `nxlock explore --exec "node examples/node/token_lock.js"` finds nothing of its
// own.

const { acquire, cycles, hold, release } = require("./cycle");

cycles(async (r, marks, run) => {
  const { token, deadline } = await acquire(r, run);
  await hold(marks, run, token, deadline);
  await release(r, token);
});
