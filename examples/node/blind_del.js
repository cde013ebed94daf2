// A lock released by a plain DEL: a holder whose lock expired (it was paused, its reply
// was late) deletes the next holder's key.

const { KEY, acquire, cycles, hold } = require("./cycle");

cycles(async (r, marks, run) => {
  const { token, deadline } = await acquire(r, run);
  await hold(marks, run, token, deadline);
  await r.del(KEY); // the bug: whoever holds the key now loses it
});
