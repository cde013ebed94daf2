"""Takes a deadline 200 ms ahead on the monotonic clock, waits 50 ms, then enters with
it: the server must count what is left (about 150 ms), not 200 ms from the marker."""

import time

import redis

import nxlock

for run in nxlock.runs():
    r = redis.Redis.from_url(run.url, retry=None)
    marks = nxlock.Markers(r)
    deadline = nxlock.deadline(200)
    time.sleep(0.05)
    with marks.section("resource", deadline):
        pass
    with marks.section("resource", px=200) as section:
        section.extend(nxlock.deadline(100))
    r.close()
