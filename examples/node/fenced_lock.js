// A correct fenced lock: SET NX PX and the fence's INCR in one script (its keys share a
// hash tag), writes to a resource that refuses stale fences, and a fence counter kept
// without a TTL by design, which it declares.

const nxlock = require("nxlock");
const crypto = require("node:crypto");
const { cycles, holdFenced, release, sleep } = require("./cycle");

const KEY = "{orders:42}:lock";
const FENCE = "{orders:42}:fence";
const ACQUIRE = `
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return redis.call('incr', KEYS[2])
end
return false
`;

async function acquire(r, run) {
  const token = crypto.randomUUID();
  for (;;) {
    const started = nxlock.monotonic();
    const fence = await r.eval(ACQUIRE, 2, KEY, FENCE, token, run.ttlMs);
    if (fence !== null) return { token, fence, deadline: nxlock.deadline(run.ttlMs, started) };
    await sleep(5);
  }
}

cycles(async (r, marks, run) => {
  marks.permanent(FENCE);
  const { token, fence, deadline } = await acquire(r, run);
  await holdFenced(marks, run, token, fence, deadline, KEY);
  await release(r, token, KEY);
});
