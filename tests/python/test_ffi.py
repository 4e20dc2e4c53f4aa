"""The compiler C API (kiln_compiler.h) straight through ctypes, with no
binding in between: it needs nothing but C types."""
import ctypes

import conftest


class Source(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("sources", ctypes.POINTER(Source)), ("source_count", ctypes.c_size_t),
                ("entries", ctypes.POINTER(ctypes.c_char_p)), ("entry_count", ctypes.c_size_t),
                ("targets", ctypes.POINTER(ctypes.c_char_p)), ("target_count", ctypes.c_size_t),
                ("opt_level", ctypes.c_int), ("debug", ctypes.c_int),
                ("jobs", ctypes.c_uint), ("link_images", ctypes.c_int),
                ("must_hit", ctypes.c_int), ("library", ctypes.c_char_p),
                ("remote", ctypes.c_char_p), ("remote_read_only", ctypes.c_int),
                ("shard_index", ctypes.c_uint), ("shard_count", ctypes.c_uint)]


class ErrorInfo(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char_p),
                ("source", ctypes.c_char_p), ("line", ctypes.c_uint), ("column", ctypes.c_uint),
                ("entry", ctypes.c_char_p), ("target", ctypes.c_char_p),
                ("job", ctypes.c_char_p)]


def test_compile_or_load_through_ctypes(tmp_path, examples):
    lib = ctypes.CDLL(str(conftest.LIBRARY_DIR / "libkiln-compiler.so"))
    lib.kiln_compile_last_error.restype = ctypes.POINTER(ErrorInfo)
    ir = (examples / "deferred.ll").read_bytes()
    buf = ctypes.create_string_buffer(ir, len(ir))
    src = Source(b"deferred.ll", ctypes.cast(buf, ctypes.c_void_p), len(ir))
    opts = Options()
    lib.kiln_compile_options_init_size(ctypes.byref(opts), ctypes.sizeof(opts))
    assert opts.struct_size == ctypes.sizeof(opts)
    assert opts.opt_level == 2 and opts.link_images == 1 and opts.shard_count == 1
    opts.sources, opts.source_count = ctypes.pointer(src), 1

    cache, image, fn = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.kiln_cache_open(str(tmp_path / "kiln.db").encode(), ctypes.byref(cache)) == 0
    assert lib.kiln_compile_or_load(cache, ctypes.byref(opts), b"collatz", None,
                                    ctypes.byref(image), None) == 0
    assert lib.kiln_image_lookup(image, b"collatz", ctypes.byref(fn)) == 0
    assert ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(fn.value)(27) == 111
    lib.kiln_image_release(image)

    # A structured error: the buffer and line of bad IR.
    bad = b"define i64 @f() {\n  ret i64 %nope\n}\n"
    bad_buf = ctypes.create_string_buffer(bad, len(bad))
    opts.sources = ctypes.pointer(Source(b"bad.ll", ctypes.cast(bad_buf, ctypes.c_void_p), len(bad)))
    assert lib.kiln_compile_or_load(cache, ctypes.byref(opts), b"f", None,
                                    ctypes.byref(image), None) == 2  # KILN_INVALID_ARGUMENT
    err = lib.kiln_compile_last_error().contents
    assert (err.source, err.line, err.column) == (b"bad.ll", 2, 11) and b"nope" in err.message
    assert (err.entry, err.target, err.job) == (b"", b"", b"")
    lib.kiln_cache_close(cache)
