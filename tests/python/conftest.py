"""Which kiln package the tests import:
- KILN_TEST_PIP=1: the one pip installed into this interpreter's
  environment (as CI does, into a fresh virtual environment);
- KILN_TEST_BIN_DIR names an installed prefix's bin/: that prefix's;
- else the build tree's (KILN_PYTHON_BUILD_DIR)."""
import os
import pathlib
import sys
import sysconfig

import pytest


def _dirs():
    """(the directory holding the package `kiln`, the directory of libkiln*)."""
    if os.environ.get("KILN_TEST_PIP"):
        site = pathlib.Path(sysconfig.get_paths()["platlib"])
        return site, site / "kiln" / "lib"
    bin_dir = os.environ.get("KILN_TEST_BIN_DIR")
    if bin_dir:
        prefix = pathlib.Path(bin_dir).parent
        return (prefix / os.environ.get("KILN_PYTHON_INSTALL_DIR", "lib/python3/dist-packages"),
                prefix / os.environ.get("KILN_INSTALL_LIBDIR", "lib"))
    build = os.environ.get("KILN_PYTHON_BUILD_DIR")
    if not build:
        raise RuntimeError("set KILN_TEST_PIP=1, KILN_TEST_BIN_DIR (an installed prefix's bin/) "
                           "or KILN_PYTHON_BUILD_DIR (the build's python/)")
    return pathlib.Path(build), pathlib.Path(os.environ.get("KILN_BUILD_LIB_DIR", ""))


PACKAGE_DIR, LIBRARY_DIR = (p.resolve() for p in _dirs())
if not os.environ.get("KILN_TEST_PIP"):
    sys.path.insert(0, str(PACKAGE_DIR))


@pytest.fixture
def examples():
    return pathlib.Path(os.environ.get("KILN_EXAMPLES", pathlib.Path(__file__).parents[2] / "examples"))


@pytest.fixture
def cache(tmp_path):
    import kiln
    return kiln.Cache(tmp_path / "kiln.db")
