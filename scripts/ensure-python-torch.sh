#!/usr/bin/env bash
# Makes sure /usr/bin/python3 can `import torch`, which the real rank runtime (clients/python/pipemorph,
# test/python-runtime.test.ts, bench:real, demo --real) needs: Debian's python3-torch (1.13, CPU,
# gloo; about 50 s to install), never pip.
exec bash "$(dirname "$0")/ensure-python-module.sh" torch python3-torch torch "the real rank runtime"
