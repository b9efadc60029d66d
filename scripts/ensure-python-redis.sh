#!/usr/bin/env bash
# Makes sure /usr/bin/python3 can `import redis` (redis-py), which the Python clients' tests
# (test/python-client.test.ts, the real-rank tests) need: Debian's python3-redis, never pip.
exec bash "$(dirname "$0")/ensure-python-module.sh" redis python3-redis redis-py test/python-client.test.ts
