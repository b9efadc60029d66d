#!/usr/bin/env bash
# Usage: ensure-python-module.sh MODULE DEBIAN_PACKAGE LABEL NEEDED_BY
# Makes sure /usr/bin/python3 can `import MODULE`: uses it when it imports, else installs the
# Debian package (needs root and apt; waits for a held dpkg lock). Never uses pip.
set -euo pipefail
module="$1"; package="$2"; label="$3"; needed_by="$4"
python=/usr/bin/python3

imports() {
  [ -x "$python" ] && "$python" -c "import $module" >/dev/null 2>&1
}
version() {
  "$python" -c "import $module, sys; print('$label %s, Python %s' % ($module.__version__, sys.version.split()[0]))"
}

if imports; then echo "$package: $python imports $(version)"; exit 0; fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "$package: $python cannot import $module; installing Debian package $package"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get -o DPkg::Lock::Timeout=600 update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$package" >/dev/null; }; then
    echo "$package: apt-get install $package failed (see above)" >&2; exit 1
  fi
  if imports; then echo "$package: installed, $python imports $(version)"; exit 0; fi
  echo "$package: installed $package, but $python still cannot import $module" >&2; exit 1
fi
echo "$package: $python cannot import $module ($label), needed by $needed_by." >&2
echo "               Install it (Debian/Ubuntu: sudo apt-get install $package) and run again." >&2
exit 1
