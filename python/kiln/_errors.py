"""Kiln's errors as Python exceptions: one class per Kiln status, each
carrying Kiln's message and, where known, the input, line, entry, target and
job it is about (fields Kiln sets where the error arises, not read from the
message)."""


class KilnError(Exception):
    """A Kiln failure. ``str(e)`` is Kiln's message."""

    status = "KILN_INTERNAL"

    def __init__(self, message, *, status=None, source="", line=0, column=0,
                 entry="", target="", job=""):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.source = source  # the input (buffer name or path), or ""
        self.line = line  # 1-based line in that input, or 0
        self.column = column
        self.entry = entry  # the entry / job it is about, or ""
        self.target = target  # the target spec it is about, or ""
        self.job = job  # the key (32 hex) of the job it is about, or ""


class NotFoundError(KilnError, LookupError):
    status = "KILN_NOT_FOUND"


class InvalidArgumentError(KilnError, ValueError):
    """Bad input: IR that does not parse, a missing entry, an unknown target."""

    status = "KILN_INVALID_ARGUMENT"


class UnavailableError(KilnError):
    """A runtime, device or linker this needs is not installed here."""

    status = "KILN_UNAVAILABLE"


class CorruptError(KilnError):
    status = "KILN_CORRUPT"


class InternalError(KilnError):
    status = "KILN_INTERNAL"


class CompileError(KilnError):
    """Some jobs failed to compile (the others are stored); ``result`` is the
    whole compile's result."""

    status = "KILN_INTERNAL"

    def __init__(self, message, result=None, **kwargs):
        super().__init__(message, **kwargs)
        self.result = result


_BY_STATUS = {cls.status: cls for cls in
              (NotFoundError, InvalidArgumentError, UnavailableError, CorruptError,
               InternalError)}


def error_class(status):
    """The exception class for a Kiln status name."""
    return _BY_STATUS.get(status, KilnError)
