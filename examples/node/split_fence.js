// A fenced lock whose fence is an INCR of its own after the SET NX PX: a holder paused
// between the two takes its fence after the next holder took one, and the resource then
// refuses the writes of the client that holds the lock (fence order).

const { acquire, cycles, holdFenced, release } = require("./cycle");

const KEY = "{orders:42}:lock";
const FENCE = "{orders:42}:fence";

cycles(async (r, marks, run) => {
  marks.permanent(FENCE); // the counter has no TTL by design
  const { token, deadline } = await acquire(r, run, KEY);
  const fence = await r.incr(FENCE); // the bug: the fence is taken apart from the lock
  await holdFenced(marks, run, token, fence, deadline, KEY);
  await release(r, token, KEY);
});
