#!/usr/bin/env bash
# Makes sure /usr/bin/python3 can `import torch`, which the real rank runtime (clients/python/pipemorph,
# test/python-runtime.test.ts, bench:real, demo --real) needs: uses it when it imports, else installs
# Debian's python3-torch (1.13, CPU, gloo; about 50 s; needs root and apt). Never uses pip.
set -euo pipefail
python=/usr/bin/python3

imports() {
  [ -x "$python" ] && "$python" -c 'import torch' >/dev/null 2>&1
}
version() {
  "$python" -c 'import torch, sys; print("torch %s, Python %s" % (torch.__version__, sys.version.split()[0]))'
}

if imports; then echo "python3-torch: $python imports $(version)"; exit 0; fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "python3-torch: $python cannot import torch; installing Debian package python3-torch"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get -o DPkg::Lock::Timeout=600 update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-torch >/dev/null; }; then
    echo "python3-torch: apt-get install python3-torch failed (see above)" >&2; exit 1
  fi
  if imports; then echo "python3-torch: installed, $python imports $(version)"; exit 0; fi
  echo "python3-torch: installed python3-torch, but $python still cannot import torch" >&2; exit 1
fi
echo "python3-torch: $python cannot import torch (PyTorch), needed by the real rank runtime." >&2
echo "               Install it (Debian/Ubuntu: sudo apt-get install python3-torch) and run again." >&2
exit 1
