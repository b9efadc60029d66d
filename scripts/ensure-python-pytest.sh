#!/usr/bin/env bash
# Makes sure /usr/bin/python3 can `import pytest`, which runs the Python client's tests
# (test/python-runtime.test.ts runs `python3 -m pytest` in clients/python): Debian's python3-pytest, never pip.
exec bash "$(dirname "$0")/ensure-python-module.sh" pytest python3-pytest pytest test/python-runtime.test.ts
