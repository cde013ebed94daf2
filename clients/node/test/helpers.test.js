// The Node helpers on their own: the run as the environment tells it, deadlines as
// MONOTONIC takes them, markers sent in order when called (awaited or not) through
// ioredis's call or node-redis's sendCommand, turned off by a server that does not know
// them, and promises that never reject. `node --test clients/node/test` (the Rust tests
// run it too).

const test = require("node:test");
const assert = require("node:assert");
const nxlock = require("..");

// A client that records what it is sent, ioredis-style (call) or node-redis-style
// (sendCommand), answering after a tick, or with an error.
function recording({ style = "ioredis", error } = {}) {
  const sent = [];
  const answer = (args) => {
    sent.push(args);
    return new Promise((resolve, reject) =>
      setImmediate(() => (error ? reject(new Error(error(args))) : resolve("OK"))),
    );
  };
  const client = style === "ioredis" ? { call: (...args) => answer(args) } : { sendCommand: answer };
  return { client, sent };
}

test("markers are sent in the order they are called, awaited or not", async () => {
  for (const style of ["ioredis", "node-redis"]) {
    const { client, sent } = recording({ style });
    const marks = nxlock.markers(client, { enabled: true });
    marks.holds("k", "t");
    marks.enter("r", { deadline: 5000.12345, fence: 3 });
    marks.extend("r", { px: 100 });
    const exited = marks.exit("r");
    assert.deepStrictEqual(sent, [
      ["NXLOCK.HOLDS", "k", "t"],
      ["NXLOCK.ENTER", "r", "MONOTONIC", "5000.123", "FENCE", "3"],
      ["NXLOCK.EXTEND", "r", "PX", "100"],
      ["NXLOCK.EXIT", "r"],
    ]);
    assert.strictEqual(await exited, "OK");
  }
});

test("a section exits however its body ends", async () => {
  const { client, sent } = recording();
  const marks = nxlock.markers(client, { enabled: true });
  await assert.rejects(
    marks.section("r", { px: 10, holds: ["k", "t"] }, async () => {
      throw new Error("the body failed");
    }),
  );
  assert.deepStrictEqual(sent.map((args) => args[0]), ["NXLOCK.HOLDS", "NXLOCK.ENTER", "NXLOCK.EXIT"]);
});

test("markers turn themselves off against a server that does not know them", async () => {
  const { client, sent } = recording({ error: (args) => `ERR unknown command '${args[0]}'` });
  const marks = nxlock.markers(client, { enabled: true });
  assert.strictEqual(await marks.enter("r"), null);
  await marks.exit("r");
  assert.strictEqual(sent.length, 1);
  assert.strictEqual(marks.enabled, false);
});

test("a stale write is false, and a failed marker never rejects", async () => {
  const stale = recording({ error: () => "STALE fence 3: the resource has accepted fence 5" });
  assert.strictEqual(await nxlock.markers(stale.client, { enabled: true }).write("r", 3), false);
  const broken = recording({ error: () => "Connection is closed." });
  const marks = nxlock.markers(broken.client, { enabled: true });
  const original = process.stderr.write;
  let said = "";
  process.stderr.write = (text) => ((said += text), true);
  try {
    assert.deepStrictEqual(await marks.exit("r"), { error: "Connection is closed." });
  } finally {
    process.stderr.write = original;
  }
  assert.match(said, /a marker could not be sent \(NXLOCK.EXIT\)/);
});

test("a deadline is on the monotonic clock, in milliseconds", () => {
  const start = nxlock.monotonic();
  assert.strictEqual(nxlock.deadline(200, start), start + 200);
  assert.ok(nxlock.monotonic() >= start);
  assert.throws(() => nxlock.markers({}), /call\(\) \(ioredis\) or sendCommand\(\)/);
});
