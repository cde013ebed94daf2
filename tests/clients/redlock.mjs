// node redlock (4.x) with ioredis against a Redis-protocol server: argv[2] is its URL.
// Exits non-zero on failure.
import assert from "node:assert/strict";
import Redis from "ioredis";
import Redlock from "redlock";

const client = new Redis(process.argv[2]);
await client.flushall();
const redlock = new Redlock([client], { retryCount: 0, driftFactor: 0.01 });

const lock = await redlock.lock("locks:resource", 10000);
assert.equal(await client.get("locks:resource"), lock.value);
await assert.rejects(redlock.lock("locks:resource", 10000), /LockError/, "held lock acquired twice");
const extended = await lock.extend(20000);
const pttl = await client.pttl("locks:resource");
assert.ok(pttl > 19000 && pttl <= 20000, `pttl after extend: ${pttl}`);
await extended.unlock();
assert.equal(await client.exists("locks:resource"), 0);

// A lock whose value changed is not ours: unlock reports it.
const second = await redlock.lock("locks:resource", 10000);
await client.set("locks:resource", "someone else");
await assert.rejects(second.unlock(), /LockError/, "unlock of a stolen lock succeeded");

// The script cache is refilled by EVAL after NOSCRIPT.
await client.del("locks:resource");
await client.script("FLUSH");
const third = await redlock.lock("locks:resource", 10000);
await third.unlock();
client.disconnect();
console.log("node redlock + ioredis: ok");
