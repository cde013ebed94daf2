"""A correct token lock: SET NX PX with a random token, and a release that deletes the
key only if it still holds the token, in one script. Its validity is counted from
before the SET. `nxlock explore --exec "python3 examples/python/token_lock.py"` finds
nothing of its own."""

from nxlock_markers import run_cycles

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


def release(r, key, token):
    r.eval(RELEASE, 1, key, token)


if __name__ == "__main__":
    run_cycles("lock:resource", release)
