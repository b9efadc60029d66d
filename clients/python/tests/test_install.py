"""The package installs as a user installs it, offline: into a fresh venv of /usr/bin/python3 that sees
the system's site-packages (Debian's torch, redis-py and setuptools; PyPI is not needed), with
`pip install --no-build-isolation --no-index "clients/python[runtime]"`. The installed package
carries the wire schemas, has the `pipemorph-launch` console script, and runs the shipped example
(examples/train_gpt.py, 2 stages) from outside the source tree.
Run from clients/python: /usr/bin/python3 -m pytest tests/test_install.py"""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
REPOSITORY = os.path.dirname(os.path.dirname(CLIENT))


@pytest.fixture(scope="module")
def venv():
    pytest.importorskip("torch")
    with tempfile.TemporaryDirectory(prefix="pipemorph-venv-") as tmp:
        # A copy of the source (clients/python beside the schemas, as in the repository), so the
        # in-tree build leaves no build/ or egg-info in the working tree.
        source = os.path.join(tmp, "repo", "clients", "python")
        shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "pipemorph-checkpoints"))
        shutil.copytree(os.path.join(REPOSITORY, "schemas"), os.path.join(tmp, "repo", "schemas"))
        # No index, no find-links, no pip configuration of this machine: only what is installed.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIPEMORPH_SCHEMA_DIR") and not k.startswith("PIP_")}
        env["PIP_CONFIG_FILE"] = os.devnull
        home = os.path.join(tmp, "venv")
        run = lambda *args: subprocess.run(list(args), cwd=tmp, env=env, capture_output=True, text=True, timeout=180)  # noqa: E731
        made = run("/usr/bin/python3", "-m", "venv", "--system-site-packages", home)
        assert made.returncode == 0, made.stderr
        pip = run(os.path.join(home, "bin", "python"), "-m", "pip", "install", "--no-build-isolation", "--no-index",
                  "--disable-pip-version-check", source + "[runtime]")
        assert pip.returncode == 0, pip.stdout + pip.stderr
        yield home, source, run


def test_the_installed_package_carries_its_schemas_and_console_script(venv):
    home, source, run = venv
    done = run(os.path.join(home, "bin", "python"), "-c",
               "import pipemorph, pipemorph.schemas as s, pipemorph.integration; print(pipemorph.__file__); print(s.schema_dir())")
    assert done.returncode == 0, done.stderr
    where, schemas = done.stdout.split()
    assert where.startswith(home) and schemas == os.path.join(os.path.dirname(where), "wire_schemas")
    launcher = run(os.path.join(home, "bin", "pipemorph-launch"), "--help")
    assert launcher.returncode == 0, launcher.stderr
    assert "--model {mlp,gpt}" in launcher.stdout


def test_the_example_trains_from_the_installed_package(venv):
    home, source, run = venv
    done = run(os.path.join(home, "bin", "python"), os.path.join(source, "examples", "train_gpt.py"), "--stages", "2",
               "--iterations", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    losses = [float(line.split("loss ")[1].split(",")[0]) for line in done.stdout.splitlines() if "loss" in line]
    assert len(losses) == 3 and losses[-1] < losses[0]
