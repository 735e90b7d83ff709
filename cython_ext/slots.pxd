# cython: language_level=3
"""Reading and writing an object's ``__slots__`` members directly, as ``member_get`` /
``member_set`` do, without the attribute lookup (a third of the Thrift decode time otherwise).

Header-only (``cdef inline``), cimported by ``thrift.pyx``. ``slot_offset`` finds where a
class keeps a writable object slot; an offset of -1 means "not a plain slot" and makes the
getters and setters fall back to ``getattr`` / ``setattr``.
"""

from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
        int flags
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member


cdef inline Py_ssize_t slot_offset(object cls, str name) except -2:
    """Where instances of ``cls`` keep ``name`` if it is a writable object slot, else -1.

    Reading and writing the slot directly is what ``member_get``/``member_set`` do, without
    the attribute lookup (a third of the decode time otherwise).
    """
    cdef PyMemberDef* m
    from types import MemberDescriptorType
    d = getattr(cls, name, None)
    if type(d) is not MemberDescriptorType or not issubclass(cls, d.__objclass__):
        return -1
    m = (<PyMemberDescrObject*><PyObject*>d).d_member
    return m.offset if m.type == 16 and not m.flags & 1 else -1   # T_OBJECT_EX, not READONLY


cdef inline int set_slot(object obj, Py_ssize_t off, str name, object v) except -1:
    """Set a field of an instance being decoded (a fresh slot is NULL)."""
    cdef PyObject** slot
    if off < 0:
        setattr(obj, name, v)
        return 0
    slot = <PyObject**>((<char*><PyObject*>obj) + off)
    Py_INCREF(v)
    Py_XDECREF(slot[0])
    slot[0] = <PyObject*>v
    return 0


cdef inline object get_slot(object obj, Py_ssize_t off, str name):
    """A field's value; an unset (deleted) attribute reads as None."""
    cdef PyObject* p
    if off < 0:
        return getattr(obj, name, None)
    p = (<PyObject**>((<char*><PyObject*>obj) + off))[0]
    return None if p == NULL else <object>p
