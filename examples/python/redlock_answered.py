"""redlock.py counting the nodes that answered its SET, not those that said OK: a node
that answered "no, it is taken" is counted as a vote, so two clients both hold the
lock."""

import redis

import redlock


def answered(nodes, command):
    votes = 0
    for node in nodes:
        try:
            command(node)
            votes += 1  # the bug: an answer is not a yes
        except redis.RedisError:
            pass
    return votes


if __name__ == "__main__":
    redlock.main(count=answered)
