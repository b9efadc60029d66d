#!/usr/bin/env bash
# Makes sure promtool and prometheus (Debian package `prometheus`, 2.42) are installed for the
# operations tests (tests/ops-*.test.ts): uses what is installed, else installs the package from
# Debian when run as root with apt. The package would start a system Prometheus on port 9090;
# services are kept from starting during the install (policy-rc.d), and a service the install
# started anyway is stopped and disabled. The tests start their own Prometheus on a free port.
set -euo pipefail

if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
  echo "prometheus: $(promtool --version 2>&1 | head -n 1)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "prometheus: promtool/prometheus are not installed and cannot be installed here (needs root and apt)." >&2
  echo "            Install them (Debian/Ubuntu: sudo apt-get install prometheus) or put them on PATH." >&2
  exit 1
fi

echo "prometheus: not installed; installing Debian package prometheus (without recommends)"
policy=/usr/sbin/policy-rc.d
created_policy=no
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# temporary, from pipemorph scripts/ensure-prometheus.sh: no service starts during the install\nexit 101\n' > "$policy"
  chmod 755 "$policy"
  created_policy=yes
fi
cleanup() { if [ "$created_policy" = yes ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
# Without a package list (a fresh machine) the first attempt fails quietly; update once and retry.
if ! { apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 ||
       { apt-get -o DPkg::Lock::Timeout=600 update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends prometheus >/dev/null; }; }; then
  echo "prometheus: installing the Debian package failed" >&2
  exit 1
fi

# Whatever the init system, leave no system Prometheus running on port 9090 because of this install.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl disable --now prometheus >/dev/null 2>&1 || true
elif [ -x /etc/init.d/prometheus ]; then
  /etc/init.d/prometheus stop >/dev/null 2>&1 || true
fi
command -v promtool >/dev/null 2>&1 || { echo "prometheus: promtool missing after the install" >&2; exit 1; }
echo "prometheus: installed $(promtool --version 2>&1 | head -n 1)"
