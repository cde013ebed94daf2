// Redlock over the nodes in NXLOCK_NODES (one port per node), with ioredis: the same
// random token set with SET NX PX on every node, the lock held when a majority said OK
// and time is left after the acquire and a drift allowance; released by a
// compare-and-delete on every node.
// `nxlock explore --exec "node examples/node/redlock.js" --topology redlock` finds nothing
// of its own.

const crypto = require("node:crypto");
const nxlock = require("nxlock");
const { KEY, RELEASE, close, connect, nodeClient, sleep, work } = require("./cycle");

// How many nodes answered `command(node)` with something true; a node's error (it is
// down, or did not answer within a fifth of the TTL) counts as a no.
async function saidOk(nodes, command) {
  const answers = await Promise.allSettled(nodes.map(command));
  return answers.filter((a) => a.status === "fulfilled" && a.value).length;
}

const release = (nodes, token) => saidOk(nodes, (node) => node.eval(RELEASE, 1, KEY, token));

// The token, and the lock's deadline on the monotonic clock, counted from before the
// SETs, less a drift allowance.
async function acquire(nodes, run) {
  const drift = Math.floor(run.ttlMs / 100) + 2;
  for (;;) {
    const token = crypto.randomUUID();
    const started = nxlock.monotonic();
    const votes = await saidOk(nodes, (node) => node.set(KEY, token, "PX", run.ttlMs, "NX"));
    const deadline = nxlock.deadline(run.ttlMs - drift, started);
    if (votes > nodes.length / 2 && nxlock.monotonic() < deadline) return { token, deadline };
    await release(nodes, token);
    await sleep(2 + Math.random() * 6);
  }
}

(async () => {
  for await (const run of nxlock.runs()) {
    const nodes = run.nodes.map((url) => nodeClient(url, run));
    // Markers go to the first node on a connection of their own: a node that dies drops
    // the lock's connections, never the markers'.
    let markers = await connect(run.url);
    for (let cycle = 0; cycle < run.cycles; cycle++) {
      try {
        const { token, deadline } = await acquire(nodes, run);
        await nxlock
          .markers(markers)
          .section("resource", { deadline, holds: [KEY, token] }, () => work(run));
        await release(nodes, token);
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
