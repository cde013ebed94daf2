// token_lock.js whose markers are never awaited, as a caller that fires and forgets
// them: they are sent on the lock's connection when called, so the server still sees
// the EXIT before the release that follows it, and the lock is found as clean.

const { KEY, acquire, cycles, release, work } = require("./cycle");

cycles(async (r, marks, run) => {
  const { token, deadline } = await acquire(r, run);
  marks.holds(KEY, token);
  marks.enter("resource", { deadline });
  await work(run);
  marks.exit("resource");
  await release(r, token);
});
