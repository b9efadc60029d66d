#!/usr/bin/env bash
# Makes sure /usr/bin/python3 can `import redis` (redis-py), which the Python reference client's
# end-to-end test (test/python-client.test.ts) needs: uses it when it imports, else installs
# Debian's python3-redis (needs root and apt; also pulls in python3 itself). Never uses pip.
set -euo pipefail
python=/usr/bin/python3

imports() {
  [ -x "$python" ] && "$python" -c 'import redis' >/dev/null 2>&1
}
version() {
  "$python" -c 'import redis, sys; print("redis-py %s, Python %s" % (redis.__version__, sys.version.split()[0]))'
}

if imports; then echo "python3-redis: $python imports $(version)"; exit 0; fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "python3-redis: $python cannot import redis; installing Debian package python3-redis"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get -o DPkg::Lock::Timeout=600 update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-redis >/dev/null; }; then
    echo "python3-redis: apt-get install python3-redis failed (see above)" >&2; exit 1
  fi
  if imports; then echo "python3-redis: installed, $python imports $(version)"; exit 0; fi
  echo "python3-redis: installed python3-redis, but $python still cannot import redis" >&2; exit 1
fi
echo "python3-redis: $python cannot import redis (redis-py), needed by test/python-client.test.ts." >&2
echo "               Install it (Debian/Ubuntu: sudo apt-get install python3-redis) and run again." >&2
exit 1
