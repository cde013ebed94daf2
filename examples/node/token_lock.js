// A correct token lock: SET NX PX with a random token, and a release that deletes the key
// only if it still holds the token, in one script. Its validity is counted from before
// the SET. `nxlock explore --exec "node examples/node/token_lock.js"` finds nothing of
// its own.

const { runCycles } = require("./markers");

const RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
`;

runCycles("lock:resource", (r, key, token) => r.eval(RELEASE, 1, key, token));
