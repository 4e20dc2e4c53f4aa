"""The part of the kiln package that needs the C++ module (_kiln, and with
it libkiln-compiler and LLVM): loaded at the first use of one of its names,
so that importing kiln, or kiln.triton's cache manager, does not load LLVM."""

import os

from . import _kiln
from ._errors import (CompileError, CorruptError, InternalError, InvalidArgumentError,
                      KilnError, NotFoundError, UnavailableError)
from ._kiln import CompileResult, Image, Job, Library, Root, present_target



def _sources(ir):
    """Normalises ``ir`` to a list of (name, bytes)."""
    items = list(ir) if isinstance(ir, (list, tuple)) else [ir]
    if not items:
        raise InvalidArgumentError("no IR given")
    out = []
    for i, item in enumerate(items):
        name = "ir" if len(items) == 1 else f"ir[{i}]"
        if isinstance(item, str):
            out.append((name, item.encode()))
        elif isinstance(item, (bytes, bytearray, memoryview)):
            out.append((name, bytes(item)))
        elif isinstance(item, os.PathLike):
            path = os.fspath(item)
            try:
                with open(path, "rb") as f:
                    out.append((path, f.read()))
            except OSError as e:
                raise InvalidArgumentError(f"cannot read '{path}': {e.strerror}",
                                           source=path) from None
        else:
            raise TypeError(f"IR must be str, bytes or os.PathLike, not {type(item).__name__}")
    return out


def _strings(what, value):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


class Cache(_kiln.Cache):
    """A Kiln cache file; ``path=None`` is the default cache ($KILN_CACHE,
    else $XDG_CACHE_HOME/kiln/kiln.db). Threads may share one."""

    def __init__(self, path=None):
        super().__init__(os.fspath(path) if path is not None else None)
        self.path = os.fspath(path) if path is not None else None  # None: the default cache

    def compile(self, ir, entries=None, targets=None, opt=2, debug=False, jobs=0, link=True,
                library=None):
        """Compiles what the cache lacks; returns a CompileResult (``keys``,
        ``statuses``, ``jobs``, ``roots``, ``libraries``). With ``library``,
        the roots of each target are also recorded as that kernel library
        (load it with ``load_library``). Bad input raises
        InvalidArgumentError and writes nothing; failed jobs raise
        CompileError (the others are stored; ``e.result`` has them all)."""
        result = self._compile(_sources(ir), _strings("entries", entries),
                               _strings("targets", targets), opt, debug, jobs, link,
                               library or "")
        if not result.ok:
            failed = [j for j in result.jobs if j.status == "failed"]
            what = "; ".join(f"job '{j.entry}' ({j.target}): {j.error}" for j in failed)
            root_errors = "; ".join([f"root '{r.name}' ({r.target}): {r.error}"
                                     for r in result.roots if r.error] +
                                    [l.error for l in result.libraries if l.error])
            first = failed[0] if failed else None
            raise CompileError(what or root_errors, result,
                               entry=first.entry if first else "",
                               target=first.target if first else "",
                               job=first.key if first else "")
        return result

    def compile_or_load(self, ir, entry, target=None, opt=2, debug=False, jobs=0):
        """The image of ``entry`` for ``target`` (None: the present device),
        from the cache if it is there, else compiled, stored and loaded.
        ``image.hit`` says which; ``image.report`` lists the jobs."""
        return self._compile_or_load(_sources(ir), entry, target or "", opt, debug, jobs)

    def load(self, name, target=None):
        """Loads a precompiled root by name (or 32-hex closure key)."""
        return self._load(name, target or "")

    def load_library(self, name, target=None):
        """Loads a kernel library (``compile(..., library=NAME)`` or
        ``kiln-precompile --library NAME``): one image holding every root's
        kernels, each found by ``image.lookup(source_name)``."""
        return self._load_library(name, target or "")
