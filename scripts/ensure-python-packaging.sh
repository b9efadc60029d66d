#!/usr/bin/env bash
# Makes sure /usr/bin/python3 can make a venv and build the Python client offline, as
# clients/python/tests/test_install.py does (`python3 -m venv --system-site-packages`, then
# `pip install --no-build-isolation --no-index`): Debian's python3-venv, python3-setuptools and
# python3-wheel. Never uses pip or PyPI.
set -euo pipefail
python=/usr/bin/python3
packages="python3-venv python3-setuptools python3-wheel"
ready() { [ -x "$python" ] && "$python" -c "import ensurepip, setuptools, wheel" >/dev/null 2>&1; }

if ready; then echo "python packaging: $python has venv (ensurepip), setuptools and wheel"; exit 0; fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "python packaging: installing Debian packages $packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  # shellcheck disable=SC2086
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq $packages >/dev/null
  if ready; then echo "python packaging: installed"; exit 0; fi
fi
echo "python packaging: $python cannot import ensurepip, setuptools and wheel, needed by clients/python/tests/test_install.py." >&2
echo "               Install them (Debian/Ubuntu: sudo apt-get install $packages) and run again." >&2
exit 1
