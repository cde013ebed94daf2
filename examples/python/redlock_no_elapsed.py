"""redlock.py counting its validity from after the acquire instead of before: an acquire
slowed by a node that does not answer leaves less of the TTL than the lock believes."""

import redlock

if __name__ == "__main__":
    redlock.main(elapsed_counts=False)
