#!/usr/bin/env bash
# Makes sure a headless Chromium is installed for the job page's browser test
# (test/job-view.browser.test.ts): uses what is installed (chromium, chromium-browser or $CHROMIUM),
# else installs Debian's `chromium` package when run as root with apt.
set -euo pipefail

for candidate in "${CHROMIUM:-}" chromium chromium-browser; do
  if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1; then
    echo "chromium: $("$candidate" --version 2>/dev/null | head -n 1)"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "chromium: not installed and cannot be installed here (needs root and apt)." >&2
  echo "          Install it (Debian: sudo apt-get install chromium) or set CHROMIUM to its path." >&2
  exit 1
fi

echo "chromium: not installed; installing Debian package chromium (without recommends)"
export DEBIAN_FRONTEND=noninteractive
# Without a package list (a fresh machine) the first attempt fails quietly; update once and retry.
if ! { apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null 2>&1 ||
       { apt-get -o DPkg::Lock::Timeout=600 update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null; }; }; then
  echo "chromium: installing the Debian package failed" >&2
  exit 1
fi
command -v chromium >/dev/null 2>&1 || { echo "chromium: chromium missing after the install" >&2; exit 1; }
echo "chromium: installed $(chromium --version 2>/dev/null | head -n 1)"
