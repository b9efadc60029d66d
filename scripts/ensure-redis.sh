#!/usr/bin/env bash
# Makes sure a Redis server answers at REDIS_URL (default redis://127.0.0.1:6379) for the tests
# and the demo: uses the one that answers, else starts the installed redis-server, else installs
# it from Debian's packages (needs root and apt) and starts it. Never touches a server it did not start.
# --installed: only makes sure redis-server and redis-cli are installed (npm test starts its own
# server, scripts/run-jest-groups.js, and leaves the one at REDIS_URL alone).
set -euo pipefail
if [ "${1:-}" = "--installed" ]; then
  if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then echo "redis: redis-server installed"; exit 0; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "redis: not installed; installing Debian package redis-server"
    apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq redis-server >/dev/null
    exit 0
  fi
  echo "redis: redis-server is not installed (Debian/Ubuntu: sudo apt-get install redis-server)" >&2; exit 1
fi
binary_only=0
url="${REDIS_URL:-redis://127.0.0.1:6379}"
hostport="${url#redis://}"; hostport="${hostport%%/*}"; hostport="${hostport##*@}"
host="${hostport%%:*}"; port="${hostport##*:}"; [ "$port" = "$host" ] && port=6379

answers() {
  if command -v redis-cli >/dev/null 2>&1; then
    [ "$(redis-cli -h "$host" -p "$port" ping 2>/dev/null)" = "PONG" ]
  else
    # No client yet: a raw PING over bash's /dev/tcp.
    exec 3<>"/dev/tcp/$host/$port" 2>/dev/null || return 1
    printf 'PING\r\n' >&3
    local reply; read -r -t 2 reply <&3 || true; exec 3>&- 3<&-
    [[ "$reply" == +PONG* ]]
  fi
}

if [ "$binary_only" = 0 ] && answers; then echo "redis: answering at $host:$port"; exit 0; fi
if ! command -v redis-server >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "redis: not installed; installing Debian package redis-server"
    apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq redis-server >/dev/null
  else
    echo "redis: nothing answers at $host:$port and redis-server is not installed." >&2
    echo "       Install it (Debian/Ubuntu: sudo apt-get install redis-server) or set REDIS_URL." >&2
    exit 1
  fi
fi
if [ "$binary_only" = 1 ]; then echo "redis: redis-server installed"; exit 0; fi
if [ "$host" != "127.0.0.1" ] && [ "$host" != "localhost" ]; then
  echo "redis: nothing answers at $host:$port (not local, so not starting one)" >&2; exit 1
fi
echo "redis: starting a private redis-server on port $port"
redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir /tmp --logfile /tmp/pipemorph-redis.log
for _ in $(seq 1 50); do answers && { echo "redis: started"; exit 0; }; sleep 0.1; done
echo "redis: failed to start (see /tmp/pipemorph-redis.log)" >&2; exit 1
