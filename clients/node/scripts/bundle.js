"use strict";
// `npm pack` runs this first (the prepack script): it copies the nxlock binary into
// vendor/<platform>-<arch>/, where the package looks for it. The binary is
// NXLOCK_BUNDLE_BIN, else the checkout's release build (cargo build --release). A pack
// without one fails here, rather than making a package that cannot run.

const fs = require("node:fs");
const path = require("node:path");

const checkout = path.resolve(__dirname, "..", "..", "..");
const from = process.env.NXLOCK_BUNDLE_BIN || path.join(checkout, "target", "release", "nxlock");
if (!fs.existsSync(from)) {
  console.error(
    `nxlock: no binary to bundle at ${from}: run \`cargo build --release\` in the checkout, ` +
      "or set NXLOCK_BUNDLE_BIN to an nxlock binary",
  );
  process.exit(1);
}
const dir = path.join(__dirname, "..", "vendor", `${process.platform}-${process.arch}`);
fs.rmSync(path.join(__dirname, "..", "vendor"), { recursive: true, force: true });
fs.mkdirSync(dir, { recursive: true });
fs.copyFileSync(from, path.join(dir, "nxlock"));
fs.chmodSync(path.join(dir, "nxlock"), 0o755);
console.error(`nxlock: bundled ${from} for ${process.platform}-${process.arch}`);
