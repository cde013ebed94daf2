// Redlock over the nodes in NXLOCK_NODES (one port per node), with ioredis: the same
// random token set with SET NX PX on every node, the lock held when a majority said OK
// and time is left after the acquire and a drift allowance; released by a
// compare-and-delete on every node.
// `nxlock explore --exec "node examples/node/redlock.js" --topology redlock` finds nothing
// of its own.

const crypto = require("node:crypto");
const Redis = require("ioredis");
const { CYCLES, TTL_MS, run, connect, close, criticalSection, outsideWork, sleep, eachRunOf } = require("./markers");

const KEY = "lock:resource";
const RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
`;

// How many nodes answered `command(node)` with something true; a node's error (it is
// down, or did not answer within a fifth of the TTL) counts as a no.
async function onEach(nodes, command) {
  const answers = await Promise.allSettled(nodes.map(command));
  return answers.filter((a) => a.status === "fulfilled" && a.value).length;
}

const release = (nodes, token) => onEach(nodes, (node) => node.eval(RELEASE, 1, KEY, token));

// The token, and until when the lock is valid (Date.now()), counted from before the
// SETs, less a drift allowance.
async function acquire(nodes) {
  const drift = Math.floor(TTL_MS / 100) + 2;
  for (;;) {
    const token = crypto.randomUUID();
    const started = Date.now();
    const saidOk = await onEach(nodes, (node) => node.set(KEY, token, "PX", TTL_MS, "NX"));
    const validUntil = started + TTL_MS - drift;
    if (saidOk > nodes.length / 2 && Date.now() < validUntil) return { token, validUntil };
    await release(nodes, token);
    await sleep(2 + Math.random() * 6);
  }
}

// A node's client: it gives up on a command after a fifth of the TTL, connects again
// after a dropped connection (a node that died and restarted), and never sends a command
// twice.
function nodeClient(url) {
  return new Redis(url, {
    commandTimeout: TTL_MS / 5,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: () => 5,
  }).on("error", () => {});
}

eachRunOf(async () => {
  const nodes = run.nodes.map(nodeClient);
  // Markers go to the first node on a connection of their own: a node that dies drops
  // the lock's connections, never the markers'.
  let markers = await connect();
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    try {
      const { token, validUntil } = await acquire(nodes);
      await criticalSection(markers, KEY, token, validUntil);
      await release(nodes, token);
      await outsideWork();
    } catch (error) {
      close(markers);
      markers = await connect();
    }
  }
  for (const client of [...nodes, markers]) close(client);
});
