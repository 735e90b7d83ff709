# cython: boundscheck=False, wraparound=False
"""A recursive listing of a local directory straight into Arrow-layout arrays.

:func:`walk_data_files` walks a directory tree with ``openat``/``fdopendir``/``readdir`` and
``fstatat`` and returns the regular files below it as four numpy arrays: the relative paths
(``/``-separated, UTF-8) as Arrow string offsets + data, their sizes, and their modification
times in milliseconds. No Python object is made per file. Spark's hidden-file rule is applied
during the walk: a name that starts with ``.``, starts with ``_`` and holds no ``=``, or ends
with ``._COPYING_`` is skipped, and a hidden directory is not entered.

What is listed, like ``pyarrow.fs.LocalFileSystem``'s recursive ``FileSelector``:

* symbolic links are followed (a link to a file is listed with its target's size and mtime; a
  link to a directory is walked); a dangling link, a link loop and an entry deleted while the
  walk runs are left out;
* only regular files are listed (no FIFOs, sockets or devices);
* a directory already open on the walk's current path (a link back to an ancestor) is not
  walked again (pyarrow walks such a cycle until the kernel refuses the path).

Paths come out sorted in UTF-8 byte order of the whole relative path: each directory's entries
are sorted by name, a directory's name compared with ``/`` appended.

Errors: the root not being a directory raises ``FileNotFoundError``/``NotADirectoryError``; a
directory or entry the process may not read raises
:class:`~metaindex.errors.StorageAccessError` (a ``PermissionError``); a name that is not UTF-8
raises :class:`~metaindex.errors.DecodeError`; any other failure of the system calls raises
:class:`~metaindex.errors.StorageError` (an ``OSError``) with its ``errno``.
"""

from libc.errno cimport errno, ENOENT, ENOTDIR, ELOOP, EACCES, EPERM
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport malloc, realloc, free, qsort
from libc.string cimport memcpy, strlen, memcmp

import os

import numpy as np

from metaindex.errors import DecodeError, StorageAccessError, StorageError

cdef extern from *:
    """
    #include <errno.h>
    #include <sys/stat.h>
    #ifdef __APPLE__
    #define st_mtim st_mtimespec
    #endif
    static inline void mi_clear_errno(void) { errno = 0; }
    """
    void mi_clear_errno() nogil

cdef extern from "<dirent.h>" nogil:
    ctypedef struct DIR:
        pass
    struct dirent:
        unsigned char d_type
        char d_name[256]
    DIR *fdopendir(int fd)
    dirent *readdir(DIR *d)
    int closedir(DIR *d)
    int DT_DIR, DT_REG, DT_LNK, DT_UNKNOWN

cdef extern from "<fcntl.h>" nogil:
    int openat(int dirfd, const char *path, int flags)
    int O_RDONLY, O_DIRECTORY, O_CLOEXEC
    int AT_FDCWD

cdef extern from "<unistd.h>" nogil:
    int close(int fd)

cdef extern from "<sys/stat.h>" nogil:
    struct timespec:
        long tv_sec
        long tv_nsec
    struct stat_t "stat":
        unsigned long st_dev
        unsigned long st_ino
        unsigned int st_mode
        long st_size
        timespec st_mtim
    int fstatat(int dirfd, const char *path, stat_t *buf, int flags)
    int fstat(int fd, stat_t *buf)
    bint S_ISDIR(unsigned int mode)
    bint S_ISREG(unsigned int mode)


cdef struct Grow:  # a growable byte buffer
    char *data
    size_t size
    size_t cap


cdef int grow_reserve(Grow *g, size_t extra) except -1:
    cdef size_t want = g.size + extra
    cdef size_t cap = g.cap if g.cap else 4096
    cdef char *p
    if want <= g.cap:
        return 0
    while cap < want:
        cap *= 2
    p = <char *>realloc(g.data, cap)
    if p == NULL:
        raise MemoryError()
    g.data, g.cap = p, cap
    return 0


cdef int grow_put(Grow *g, const void *src, size_t n) except -1:
    grow_reserve(g, n)
    memcpy(g.data + g.size, src, n)
    g.size += n
    return 0


cdef struct Entry:  # one name of a directory being walked
    size_t name_at  # offset of the name (NUL-terminated) in the walker's name arena
    size_t name_len
    int is_dir
    int64_t size
    int64_t mtime_ms


cdef struct Walker:
    Grow paths  # concatenated relative paths (the Arrow string data)
    Grow offsets  # int64 end offsets, one per file
    Grow sizes  # int64
    Grow mtimes  # int64
    Grow prefix  # the current directory's relative path, with a trailing '/' unless root
    Grow ids  # (st_dev, st_ino) pairs of the directories on the current path
    const char *names  # the arena of the directory being sorted (for the comparator)


cdef int is_hidden(const char *name, size_t n) noexcept nogil:
    cdef size_t i
    if n == 0:
        return 0
    if name[0] == b'.':
        return 1
    if name[0] == b'_':
        for i in range(1, n):
            if name[i] == b'=':
                break
        else:
            return 1
    if n >= 10 and memcmp(name + n - 10, b"._COPYING_", 10) == 0:
        return 1
    return 0


cdef int utf8_valid(const uint8_t *s, size_t n) noexcept nogil:
    """Strict UTF-8 (what Python's decoder accepts): no overlongs, surrogates or > U+10FFFF."""
    cdef size_t i = 0
    cdef uint8_t c, c1
    cdef size_t k, need
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        if 0xC2 <= c <= 0xDF:
            need = 1
        elif 0xE0 <= c <= 0xEF:
            need = 2
        elif 0xF0 <= c <= 0xF4:
            need = 3
        else:
            return 0
        if i + need >= n:
            return 0
        c1 = s[i + 1]
        if c == 0xE0 and c1 < 0xA0:
            return 0
        if c == 0xED and c1 > 0x9F:
            return 0
        if c == 0xF0 and c1 < 0x90:
            return 0
        if c == 0xF4 and c1 > 0x8F:
            return 0
        for k in range(1, need + 1):
            if (s[i + k] & 0xC0) != 0x80:
                return 0
        i += need + 1
    return 1


cdef const char *_arena = NULL  # the names qsort's comparator reads (set around each sort)


cdef int entry_cmp(const void *a, const void *b) noexcept nogil:
    """Entries by name, a directory's name as if it ended in '/': whole-path byte order."""
    cdef const Entry *x = <const Entry *>a
    cdef const Entry *y = <const Entry *>b
    cdef size_t n = x.name_len if x.name_len < y.name_len else y.name_len
    cdef int c = memcmp(_arena + x.name_at, _arena + y.name_at, n)
    cdef int cx, cy
    if c:
        return c
    cx = (b'/' if x.is_dir else -1) if x.name_len == n else <uint8_t>_arena[x.name_at + n]
    cy = (b'/' if y.is_dir else -1) if y.name_len == n else <uint8_t>_arena[y.name_at + n]
    return cx - cy


cdef object os_error(int err, bytes path):
    name = os.fsdecode(path)
    message = os.strerror(err)
    if err == EACCES or err == EPERM:
        return StorageAccessError(err, f"cannot list {name!r}: {message}", name)
    return StorageError(err, f"cannot list {name!r}: {message}", name)


cdef int walk_dir(Walker *w, int fd, bytes root) except -1:
    """List directory ``fd`` (closed here) whose relative path is ``w.prefix``."""
    global _arena
    cdef DIR *d = fdopendir(fd)
    cdef dirent *e
    cdef Grow arena
    cdef Grow entries
    cdef Entry ent
    cdef Entry *ents
    cdef stat_t st
    cdef size_t n, i, j, count, prefix_len
    cdef bint seen
    cdef int64_t end
    cdef int sub, err
    cdef unsigned char t
    cdef unsigned long *ids
    if d == NULL:
        err = errno
        close(fd)
        raise os_error(err, root + b"/" + w.prefix.data[:w.prefix.size])
    arena.data, arena.size, arena.cap = NULL, 0, 0
    entries.data, entries.size, entries.cap = NULL, 0, 0
    try:
        while True:
            mi_clear_errno()
            e = readdir(d)
            if e == NULL:
                if errno:
                    raise os_error(errno, root + b"/" + w.prefix.data[:w.prefix.size])
                break
            n = strlen(e.d_name)
            if (n == 1 and e.d_name[0] == b'.') or (
                n == 2 and e.d_name[0] == b'.' and e.d_name[1] == b'.'
            ):
                continue
            if is_hidden(e.d_name, n):
                continue
            t = e.d_type
            ent.name_at, ent.name_len = arena.size, n
            ent.size, ent.mtime_ms = 0, 0
            if t == DT_DIR:
                ent.is_dir = 1
            elif t == DT_REG or t == DT_LNK or t == DT_UNKNOWN:
                if fstatat(fd, e.d_name, &st, 0) != 0:
                    err = errno
                    if err == ENOENT or err == ELOOP or err == ENOTDIR:
                        continue  # gone while listing, a dangling link, a link loop
                    raise os_error(err, root + b"/" + w.prefix.data[:w.prefix.size] + e.d_name)
                if S_ISDIR(st.st_mode):
                    ent.is_dir = 1
                elif S_ISREG(st.st_mode):
                    ent.is_dir = 0
                    ent.size = st.st_size
                    ent.mtime_ms = <int64_t>st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec // 1000000
                else:
                    continue
            else:
                continue  # FIFOs, sockets, devices
            if not utf8_valid(<const uint8_t *>e.d_name, n):
                raise DecodeError(
                    f"{os.fsdecode(root + b'/' + w.prefix.data[:w.prefix.size] + e.d_name)!r}: "
                    "the file name is not UTF-8; metaindex records paths as UTF-8"
                )
            grow_put(&arena, e.d_name, n + 1)
            grow_put(&entries, &ent, sizeof(Entry))
        count = entries.size // sizeof(Entry)
        ents = <Entry *>entries.data
        _arena = arena.data
        qsort(ents, count, sizeof(Entry), entry_cmp)
        _arena = NULL
        prefix_len = w.prefix.size
        for i in range(count):
            if not ents[i].is_dir:
                grow_put(&w.paths, w.prefix.data, prefix_len)
                grow_put(&w.paths, arena.data + ents[i].name_at, ents[i].name_len)
                end = w.paths.size
                grow_put(&w.offsets, &end, 8)
                grow_put(&w.sizes, &ents[i].size, 8)
                grow_put(&w.mtimes, &ents[i].mtime_ms, 8)
                continue
            sub = openat(fd, arena.data + ents[i].name_at, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if sub < 0:
                err = errno
                if err == ENOENT or err == ENOTDIR or err == ELOOP:
                    continue
                raise os_error(
                    err,
                    root + b"/" + w.prefix.data[:prefix_len]
                    + arena.data[ents[i].name_at:ents[i].name_at + ents[i].name_len],
                )
            if fstat(sub, &st) != 0:
                err = errno
                close(sub)
                raise os_error(err, root + b"/" + w.prefix.data[:prefix_len])
            ids = <unsigned long *>w.ids.data
            seen = False
            for j in range(0, w.ids.size // sizeof(unsigned long), 2):
                if ids[j] == st.st_dev and ids[j + 1] == st.st_ino:
                    seen = True
                    break
            if not seen:
                grow_put(&w.ids, &st.st_dev, sizeof(unsigned long))
                grow_put(&w.ids, &st.st_ino, sizeof(unsigned long))
                grow_put(&w.prefix, arena.data + ents[i].name_at, ents[i].name_len)
                grow_put(&w.prefix, b"/", 1)
                try:
                    walk_dir(w, sub, root)
                finally:
                    w.prefix.size = prefix_len
                    w.ids.size -= 2 * sizeof(unsigned long)
                continue
            close(sub)  # a directory already on the walk's path: a cycle
    finally:
        closedir(d)
        free(arena.data)
        free(entries.data)
    return 0


cdef object as_array(Grow *g, object dtype):
    out = np.empty(g.size // np.dtype(dtype).itemsize, dtype)
    cdef char[::1] view
    if g.size:
        view = out.view(np.int8)
        memcpy(&view[0], g.data, g.size)
    return out


def walk_data_files(root):
    """The regular data files below directory ``root`` (str or bytes), recursively.

    Returns ``(offsets, data, sizes, mtimes)``: ``offsets`` int64 (n + 1, from 0) and
    ``data`` uint8, the relative paths as an Arrow (large) string array's buffers; ``sizes``
    int64 bytes; ``mtimes`` int64 milliseconds since the epoch (floored). See the module
    docstring for what is listed, the order and the errors.
    """
    cdef bytes broot = os.fsencode(root)
    cdef Walker w
    cdef int fd
    cdef stat_t st
    cdef int64_t zero = 0
    if b"\x00" in broot:
        raise ValueError("root holds a NUL character")
    w.paths.data = w.offsets.data = w.sizes.data = w.mtimes.data = NULL
    w.prefix.data = w.ids.data = NULL
    w.paths.size = w.offsets.size = w.sizes.size = w.mtimes.size = 0
    w.prefix.size = w.ids.size = 0
    w.paths.cap = w.offsets.cap = w.sizes.cap = w.mtimes.cap = 0
    w.prefix.cap = w.ids.cap = 0
    try:
        fd = openat(AT_FDCWD, broot, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0:
            err = errno
            if err == ENOENT:
                raise FileNotFoundError(err, os.strerror(err), os.fsdecode(broot))
            if err == ENOTDIR:
                raise NotADirectoryError(err, os.strerror(err), os.fsdecode(broot))
            raise os_error(err, broot)
        if fstat(fd, &st) != 0:
            err = errno
            close(fd)
            raise os_error(err, broot)
        grow_put(&w.ids, &st.st_dev, sizeof(unsigned long))
        grow_put(&w.ids, &st.st_ino, sizeof(unsigned long))
        grow_reserve(&w.prefix, 1)
        grow_put(&w.offsets, &zero, 8)
        walk_dir(&w, fd, broot.rstrip(b"/") or b"/")
        return (
            as_array(&w.offsets, np.int64),
            as_array(&w.paths, np.uint8),
            as_array(&w.sizes, np.int64),
            as_array(&w.mtimes, np.int64),
        )
    finally:
        free(w.paths.data)
        free(w.offsets.data)
        free(w.sizes.data)
        free(w.mtimes.data)
        free(w.prefix.data)
        free(w.ids.data)
