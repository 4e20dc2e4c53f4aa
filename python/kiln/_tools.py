"""The console scripts `kiln-precompile` and `kiln-inspect` of a pip
install: each replaces the Python process with the tool installed in the
package's bin/ (kiln/bin, beside kiln/lib), so exit statuses, signals and
standard streams are the tool's own."""
import os
import pathlib
import sys


def _exec(name):
    tool = pathlib.Path(__file__).resolve().parent / "bin" / name
    if not tool.is_file():
        sys.stderr.write(f"{name}: not installed in {tool.parent} (install the kiln package "
                         f"with `pip install .`; a CMake build has it in <build>/bin)\n")
        sys.exit(127)
    os.execv(tool, [name, *sys.argv[1:]])


def precompile():
    _exec("kiln-precompile")


def inspect():
    _exec("kiln-inspect")
