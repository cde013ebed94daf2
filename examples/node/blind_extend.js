// A lock that extends itself halfway through its section with a plain PEXPIRE: a holder
// whose lock expired meanwhile extends the next holder's key, and believes it is its own
// for another TTL.

const nxlock = require("nxlock");
const { KEY, acquire, cycles, release, work } = require("./cycle");

cycles(async (r, marks, run) => {
  const { token, deadline } = await acquire(r, run);
  await marks.section("resource", { deadline, holds: [KEY, token] }, async (section) => {
    await work(run);
    const started = nxlock.monotonic();
    await r.pexpire(KEY, run.ttlMs); // the bug: no check that the key is still ours
    section.extend({ deadline: nxlock.deadline(run.ttlMs, started) });
    await work(run);
  });
  await release(r, token);
});
