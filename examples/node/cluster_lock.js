// token_lock.js on a Redis Cluster, through ioredis's Cluster: the lock's key lives on
// one shard, found by its slot (and again after a MOVED when the slot migrates).
// `nxlock explore --exec "node examples/node/cluster_lock.js" --topology cluster` serves
// it three shards of a primary and a replica each.

const Redis = require("ioredis");
const { acquire, cycles, hold, release, sleep } = require("./cycle");

// A cluster client on the run's nodes. No offline queue and no resends of its own (see
// cycle.js); MOVED is still followed. Markers name no key: ioredis sends them to any
// node, and every node of an exploring serve takes them. It reads the slots first,
// which a fault may refuse: a few tries, as a service would make, each bounded by five
// TTLs. (Without the bound, ioredis 5.4's connect() never settles once the reply to a
// node's ready check, its INFO, is lost: the explorer reports that as liveness.)
async function connect(run) {
  for (let attempt = 1; ; attempt++) {
    const nodes = run.nodes.map((url) => {
      const { hostname, port } = new URL(url);
      return { host: hostname, port: Number(port) };
    });
    const cluster = new Redis.Cluster(nodes, {
      lazyConnect: true,
      enableOfflineQueue: false,
      clusterRetryStrategy: () => null,
      redisOptions: { maxRetriesPerRequest: 0, retryStrategy: () => null },
    });
    cluster.on("error", () => {});
    let timer;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error("connect timed out")), 5 * run.ttlMs);
    });
    try {
      await Promise.race([cluster.connect(), late]);
      clearTimeout(timer);
      return cluster;
    } catch (error) {
      clearTimeout(timer);
      cluster.disconnect();
      if (attempt === 5) throw error;
      await sleep(10);
    }
  }
}

cycles(async (r, marks, run) => {
  const { token, deadline } = await acquire(r, run);
  await hold(marks, run, token, deadline);
  await release(r, token);
}, connect);
