"""Build hook only (the metadata is in pyproject.toml): ships the wire protocol's JSON Schemas, the
repository's schemas/*.schema.json, inside the package as pipemorph/wire_schemas/, so an installed
pipemorph validates its messages without the repository (pipemorph/schemas.py looks there)."""
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

REPOSITORY_SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schemas")


class BuildPyWithSchemas(build_py):
    def run(self) -> None:
        super().run()
        files = sorted(glob.glob(os.path.join(REPOSITORY_SCHEMAS, "*.schema.json")))
        if not files:  # e.g. built from an sdist outside the repository: PIPEMORPH_SCHEMA_DIR then
            return
        target = os.path.join(self.build_lib, "pipemorph", "wire_schemas")
        os.makedirs(target, exist_ok=True)
        for path in files:
            shutil.copy(path, target)


setup(cmdclass={"build_py": BuildPyWithSchemas})
