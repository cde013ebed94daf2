// The `redlock` package, version 5 (npm's redlock@5.0.0-beta.2), over the nodes in
// NXLOCK_NODES with ioredis: `acquire` and `release` as its README shows them, its
// validity (`lock.expiration`, on the wall clock) stated to the explorer as what is left
// of it. `nxlock explore --exec "node examples/node/node_redlock.js" --topology redlock`.
// tests/clients installs it as `redlock5`, beside version 4 as `redlock`.

const nxlock = require("nxlock");
const { KEY, close, connect, nodeClient, work } = require("./cycle");

const Redlock = (() => {
  try {
    return require("redlock5").default;
  } catch {
    return require("redlock").default;
  }
})();
if (typeof Redlock?.prototype?.acquire !== "function") {
  throw new Error("this example needs redlock version 5 (npm install redlock@5.0.0-beta.2)");
}

// Tries per acquire (REDLOCK_RETRY_COUNT, default 20; then the loop below tries again).
// redlock keeps what it won on a minority of nodes from one try to the next, and gives it
// back only when its tries run out: with -1 (no end), clients that each won one node can
// wait for each other until the run's liveness bound, which the explorer reports.
const RETRY_COUNT = Number(process.env.REDLOCK_RETRY_COUNT || 20);

(async () => {
  for await (const run of nxlock.runs()) {
    // As for any Redlock: a node that does not answer within a fifth of the TTL is given
    // up on; commands are never sent twice.
    const nodes = run.nodes.map((url) => nodeClient(url, run));
    // The defaults for release (10 retries, 200 ms apart). Not `retryCount: -1` here: it
    // applies to release too, and the release of a lock that expired (its keys gone)
    // then retries forever, which the explorer reports as a liveness violation.
    const redlock = new Redlock(nodes);
    redlock.on("error", () => {});
    let markers = await connect(run.url);
    for (let cycle = 0; cycle < run.cycles; cycle++) {
      try {
        const lock = await redlock.acquire([KEY], run.ttlMs, {
          retryCount: RETRY_COUNT,
          retryDelay: 5,
          retryJitter: 3,
        });
        // redlock says until when on the wall clock: as a deadline on the monotonic one.
        const deadline = nxlock.monotonic() + (lock.expiration - Date.now());
        await nxlock
          .markers(markers)
          .section("resource", { deadline, holds: [KEY, lock.value] }, () => work(run));
        await lock.release().catch(() => {});
        await work(run);
      } catch (error) {
        close(markers);
        markers = await connect(run.url);
      }
    }
    for (const client of [...nodes, markers]) close(client);
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
