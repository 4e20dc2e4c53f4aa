"""Kiln from Python: compile LLVM IR into a Kiln cache in-process, and load
precompiled kernels.

    import ctypes, kiln
    cache = kiln.Cache("kiln.db")
    result = cache.compile(ir_text, entries=["fib"])      # keys, statuses
    image = cache.load("fib")                             # or cache.compile_or_load(ir_text, "fib")
    fib = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(image.function("fib"))

``ir`` is textual IR (str), bitcode or text (bytes), a path (os.PathLike),
or a list of those, linked into one unit. Errors are KilnError subclasses
carrying Kiln's message and where it arose (``source``, ``line``, ``entry``,
``target``, ``job``). An image's addresses are valid while the image is alive
(or until ``image.close()``).
"""

from ._errors import (CompileError, CorruptError, InternalError, InvalidArgumentError,
                      KilnError, NotFoundError, UnavailableError)

__all__ = ["Cache", "CompileResult", "Image", "Job", "Library", "Root", "present_target", "KilnError",
           "NotFoundError", "InvalidArgumentError", "UnavailableError", "CorruptError",
           "InternalError", "CompileError"]

# Cache and the C++ module's types load libkiln-compiler and LLVM (tens of
# milliseconds): only when first used.
_LAZY = {"Cache", "CompileResult", "Image", "Job", "Library", "Root", "present_target", "_sources",
         "_strings"}


def __getattr__(name):
    import importlib
    if name in _LAZY:
        value = getattr(importlib.import_module("kiln._api"), name)
        globals()[name] = value
        return value
    if name == "_kiln":
        return importlib.import_module("kiln._kiln")
    raise AttributeError(f"module 'kiln' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | _LAZY)
