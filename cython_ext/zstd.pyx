# cython: language_level=3
"""ZSTD page bodies decompressed by the system's libzstd (``libzstd.so.1``), into a caller's
buffer, without the GIL.

The ``zstandard`` package builds its own copy of the library from the single-file source,
which leaves out the x86-64 assembly Huffman decoders; distributions' libzstd has them (12 %
less CPU on pages of random 64-bit integers here, which are nearly all Huffman-coded
literals). The library is opened with ``dlopen`` when this module is imported: where it is
missing, or older than 1.4, ``available`` is False and the caller keeps to ``zstandard``
(``metaindex.parquet.compression`` does). No code of the library is copied; only the five
functions of its stable API below are looked up.

Decompression is exact: ``ZSTD_decompressDCtx`` never writes past the capacity it is given,
and output of any other length than the page header's size, or a frame the library refuses,
is a ``DecodeError``. One context per :class:`Decompressor`; a context is not thread-safe, so
callers keep one per thread.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint8_t
from posix.dlfcn cimport dlopen, dlsym, dlerror, RTLD_NOW, RTLD_LOCAL

from metaindex.errors import DecodeError

__all__ = ["available", "version", "Decompressor"]

ctypedef void* (*create_fn)() noexcept nogil
ctypedef size_t (*free_fn)(void*) noexcept nogil
ctypedef size_t (*decompress_fn)(void*, void*, size_t, const void*, size_t) noexcept nogil
ctypedef unsigned (*is_error_fn)(size_t) noexcept nogil
ctypedef const char* (*error_name_fn)(size_t) noexcept nogil
ctypedef unsigned (*version_fn)() noexcept nogil

cdef create_fn _create = NULL
cdef free_fn _free = NULL
cdef decompress_fn _decompress = NULL
cdef is_error_fn _is_error = NULL
cdef error_name_fn _error_name = NULL


cdef unsigned _open_library():
    """Look the functions up; the library's version number, or 0 where it cannot be used."""
    global _create, _free, _decompress, _is_error, _error_name
    cdef void* lib = dlopen(b"libzstd.so.1", RTLD_NOW | RTLD_LOCAL)
    cdef version_fn get_version
    if lib == NULL:
        dlerror()
        return 0
    get_version = <version_fn>dlsym(lib, b"ZSTD_versionNumber")
    _create = <create_fn>dlsym(lib, b"ZSTD_createDCtx")
    _free = <free_fn>dlsym(lib, b"ZSTD_freeDCtx")
    _decompress = <decompress_fn>dlsym(lib, b"ZSTD_decompressDCtx")
    _is_error = <is_error_fn>dlsym(lib, b"ZSTD_isError")
    _error_name = <error_name_fn>dlsym(lib, b"ZSTD_getErrorName")
    if get_version == NULL or _create == NULL or _free == NULL or _decompress == NULL or \
            _is_error == NULL or _error_name == NULL or get_version() < 10400:
        _decompress = NULL
        return 0
    return get_version()


cdef unsigned _version = _open_library()
available = _version != 0
version = _version if _version else None


cdef class Decompressor:
    """One libzstd decompression context (use one per thread).

    Raises:
        RuntimeError: the system's libzstd is not available (``available`` is False).
        MemoryError: the context could not be allocated.
    """

    cdef void* _dctx

    def __cinit__(self):
        if _decompress == NULL:
            raise RuntimeError("the system's libzstd (libzstd.so.1, >= 1.4) is not available")
        self._dctx = _create()
        if self._dctx == NULL:
            raise MemoryError("ZSTD_createDCtx failed")

    def __dealloc__(self):
        if self._dctx != NULL:
            _free(self._dctx)

    def decompress_into(self, data, out) -> None:
        """Decompress the frame(s) in ``data`` into ``out``, a writable C-contiguous buffer of
        exactly the uncompressed size (released GIL for pages of 64 KiB or more).

        Raises:
            DecodeError: a frame the library refuses (corrupt, truncated, or needing more
                room than ``out``), or one that decodes to fewer bytes than ``out`` holds.
            BufferError: ``out`` is not writable or not contiguous.
        """
        cdef Py_buffer src, dst
        cdef size_t got
        cdef uint8_t empty = 0
        # the buffer protocol directly: a typed memoryview costs more than a small page's copy
        PyObject_GetBuffer(data, &src, PyBUF_SIMPLE)
        try:
            PyObject_GetBuffer(out, &dst, PyBUF_SIMPLE | PyBUF_WRITABLE)
        except BaseException:
            PyBuffer_Release(&src)
            raise
        cdef const void* sp = src.buf
        cdef void* dp = dst.buf
        cdef size_t cap = <size_t>dst.len
        if src.len == 0:
            sp = &empty
        if cap == 0:
            dp = &empty
        try:
            if cap >= 65536:
                with nogil:
                    got = _decompress(self._dctx, dp, cap, sp, <size_t>src.len)
            else:
                got = _decompress(self._dctx, dp, cap, sp, <size_t>src.len)
        finally:
            PyBuffer_Release(&dst)
            PyBuffer_Release(&src)
        if _is_error(got):
            raise DecodeError(f"ZSTD page does not decompress: "
                              f"{_error_name(got).decode('ascii', 'replace')}")
        if got != cap:
            raise DecodeError(f"ZSTD page decompressed to {got} bytes, header says {cap}")

    def decompress_pages(self, list pages, list sizes, out) -> None:
        """Decompress a run of pages one after another into ``out``: page ``i``'s body
        (``pages[i][0]``, as in a ``(body, count)`` pair) into the next ``sizes[i]`` bytes.
        ``out`` must hold exactly ``sum(sizes)`` bytes. One call for the run: no per-page
        Python work.

        Raises:
            DecodeError: the first page that does not decompress to its size (its position
                in the run is in the message); pages before it are decompressed.
            ValueError: ``out`` is not the pages' size, or the lists' lengths differ.
        """
        cdef Py_ssize_t npages = len(pages), p
        cdef Py_buffer dst, src
        cdef size_t got, size, total = 0
        cdef uint8_t* at
        cdef uint8_t empty = 0
        cdef void* dp
        cdef const void* sp
        if len(sizes) != npages:
            raise ValueError(f"{npages} pages but {len(sizes)} sizes")
        for p in range(npages):
            if sizes[p] < 0:
                raise DecodeError(f"page {p} of {npages}: negative uncompressed size")
            total += <size_t>sizes[p]
        PyObject_GetBuffer(out, &dst, PyBUF_SIMPLE | PyBUF_WRITABLE)
        try:
            if <size_t>dst.len != total:
                raise ValueError(f"out holds {dst.len} bytes, the pages {total}")
            at = <uint8_t*>dst.buf
            for p in range(npages):
                size = <size_t>sizes[p]
                PyObject_GetBuffer(pages[p][0], &src, PyBUF_SIMPLE)
                try:
                    dp = at if size else <void*>&empty
                    sp = src.buf
                    if src.len == 0:
                        sp = &empty
                    with nogil:
                        got = _decompress(self._dctx, dp, size, sp, <size_t>src.len)
                finally:
                    PyBuffer_Release(&src)
                if _is_error(got):
                    raise DecodeError(f"page {p} of {npages}: ZSTD page does not decompress: "
                                      f"{_error_name(got).decode('ascii', 'replace')}")
                if got != size:
                    raise DecodeError(f"page {p} of {npages}: ZSTD page decompressed to {got} "
                                      f"bytes, header says {size}")
                at += size
        finally:
            PyBuffer_Release(&dst)
