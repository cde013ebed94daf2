// redis-semaphore (Mutex on strings, Semaphore and MultiSemaphore on sorted sets) with
// ioredis against a Redis-protocol server: argv[2] is its URL. Exits non-zero on failure.
import assert from "node:assert/strict";
import Redis from "ioredis";
import { Mutex, Semaphore, MultiSemaphore, TimeoutError } from "redis-semaphore";

const client = new Redis(process.argv[2]);
await client.flushall();
const options = { lockTimeout: 10000, acquireTimeout: 200, retryInterval: 10, refreshInterval: 0 };

// A mutex: exclusive until released.
const mutex = new Mutex(client, "job", options);
await mutex.acquire();
assert.ok(mutex.isAcquired);
const rival = new Mutex(client, "job", options);
assert.equal(await rival.tryAcquire(), false, "a held mutex was acquired twice");
await assert.rejects(rival.acquire(), TimeoutError);
await mutex.release();
assert.equal(await rival.tryAcquire(), true, "a released mutex was not acquirable");
await rival.release();

// A semaphore of 2: a sorted set of holders scored by acquisition time.
const holders = [1, 2, 3].map(() => new Semaphore(client, "pool", 2, options));
assert.equal(await holders[0].tryAcquire(), true);
assert.equal(await holders[1].tryAcquire(), true);
assert.equal(await holders[2].tryAcquire(), false, "a full semaphore let a third in");
assert.equal(await client.zcard("semaphore:pool"), 2);
await holders[0].release();
assert.equal(await holders[2].tryAcquire(), true, "a freed permit was not handed out");
await holders[1].release();
await holders[2].release();
assert.equal(await client.zcard("semaphore:pool"), 0);

// A multi-semaphore: several permits at once.
const big = new MultiSemaphore(client, "slots", 5, 3, options);
const small = new MultiSemaphore(client, "slots", 5, 2, options);
const more = new MultiSemaphore(client, "slots", 5, 1, options);
assert.equal(await big.tryAcquire(), true);
assert.equal(await small.tryAcquire(), true);
assert.equal(await more.tryAcquire(), false, "more permits than the limit were handed out");
await big.release();
assert.equal(await more.tryAcquire(), true);
await small.release();
await more.release();

client.disconnect();
console.log("redis-semaphore + ioredis: Mutex, Semaphore, MultiSemaphore ok");
