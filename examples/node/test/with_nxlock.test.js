"use strict";
// The nxlock package's test helpers on lock code: `npm install` here (the package comes
// from the checkout, with the binary `cargo build --release` made), then `node --test`.

const assert = require("node:assert/strict");
const path = require("node:path");
const { test } = require("node:test");

const Redis = require("ioredis");
const { explore, startServer } = require("nxlock");

const here = path.resolve(__dirname, "..");
const node = (script) => `${JSON.stringify(process.execPath)} ${path.join(here, script)}`;

test("a 30 second lock expires at once when the server fastforwards", async () => {
  const server = await startServer();
  const redis = new Redis(server.url);
  try {
    assert.equal(await redis.set("lock", "me", "PX", 30000, "NX"), "OK");
    assert.equal(await redis.set("lock", "you", "PX", 30000, "NX"), null);
    await server.fastforward(29000); // 1 s left (and real time runs on a little)
    assert.equal(await redis.set("lock", "you", "PX", 30000, "NX"), null);
    await server.fastforward(1001);
    assert.equal(await redis.set("lock", "you", "PX", 30000, "NX"), "OK");
  } finally {
    redis.disconnect();
    await server.stop();
  }
});

test("ioredis resends a lock SET whose reply was lost, and reports the lock as not taken", async () => {
  const server = await startServer();
  const worker = new Redis(server.url, { connectionName: "worker" });
  const admin = new Redis(server.url);
  try {
    await worker.ping();
    await server.fault("worker", "lose-reply");
    // The SET runs, its reply is lost with the connection; ioredis reconnects and sends
    // it again (autoResendUnfulfilledCommands), and the lock it took refuses it.
    assert.equal(await worker.set("lock", "token-1", "PX", 30000, "NX"), null);
    assert.equal(await admin.get("lock"), "token-1");
  } finally {
    worker.disconnect();
    admin.disconnect();
    await server.stop();
  }
});

test("the token lock has no bug of its own", async () => {
  const report = await explore(node("token_lock.js"), { runs: 60 });
  assert.equal(report.runs, 60);
  assert.deepEqual(report.violations, {});
});

test("the get-compare-del lock is caught with its counterexample", async () => {
  await assert.rejects(
    explore(node("get_then_del.js"), {
      runs: 300,
      seed: 2,
      extra: ["--replays", "3", "--confirm", "2"],
    }),
    (error) => {
      assert.match(error.message, /lost-ownership/);
      assert.match(error.message, /timeline: .*--replay/s);
      return true;
    },
  );
});
