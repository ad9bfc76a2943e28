# The C extension is described by foundry_build.py (cffi); everything else
# is in pyproject.toml.
from setuptools import setup

setup(cffi_modules=["foundry_build.py:ffibuilder"])
