"""Which kiln package the tests import: the installed prefix's when
KILN_TEST_BIN_DIR names its bin/ (as CI does after `cmake --install`), else
the build tree's."""
import os
import pathlib
import sys

import pytest


def _package_dir():
    bin_dir = os.environ.get("KILN_TEST_BIN_DIR")
    install_dir = os.environ.get("KILN_PYTHON_INSTALL_DIR", "lib/python3/dist-packages")
    if bin_dir:
        return pathlib.Path(bin_dir).parent / install_dir
    build = os.environ.get("KILN_PYTHON_BUILD_DIR")
    if not build:
        raise RuntimeError("set KILN_PYTHON_BUILD_DIR (the build's python/) or KILN_TEST_BIN_DIR")
    return pathlib.Path(build)


def _library_dir():
    bin_dir = os.environ.get("KILN_TEST_BIN_DIR")
    if bin_dir:
        return pathlib.Path(bin_dir).parent / os.environ.get("KILN_INSTALL_LIBDIR", "lib")
    return pathlib.Path(os.environ.get("KILN_BUILD_LIB_DIR", ""))


PACKAGE_DIR = _package_dir().resolve()
LIBRARY_DIR = _library_dir().resolve()
sys.path.insert(0, str(PACKAGE_DIR))


@pytest.fixture
def examples():
    return pathlib.Path(os.environ.get("KILN_EXAMPLES", pathlib.Path(__file__).parents[2] / "examples"))


@pytest.fixture
def cache(tmp_path):
    import kiln
    return kiln.Cache(tmp_path / "kiln.db")
