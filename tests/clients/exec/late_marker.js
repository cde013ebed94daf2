// late_marker.py with Node: a deadline 200 ms ahead on process.hrtime's clock, entered
// 50 ms later, must leave about 150 ms.

const Redis = require("ioredis");
const nxlock = require("nxlock");

(async () => {
  for await (const run of nxlock.runs()) {
    const r = new Redis(run.url, { maxRetriesPerRequest: 0 });
    const marks = nxlock.markers(r);
    const deadline = nxlock.deadline(200);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await marks.section("resource", { deadline }, async () => {});
    await marks.section("resource", { px: 200 }, (section) =>
      section.extend({ deadline: nxlock.deadline(100) }),
    );
    r.disconnect();
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
