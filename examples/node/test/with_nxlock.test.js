"use strict";
// The nxlock package's test helpers on lock code: `npm install` here, then
// `NXLOCK_BIN=../../target/release/nxlock node --test`.

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
