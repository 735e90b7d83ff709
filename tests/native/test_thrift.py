"""The Thrift compact protocol kernel against the pure-Python reference (tests/reference/thrift.py).

Every case runs through both codecs: hypothesis-generated field tables and values, unknown
fields of every wire type, long-form field ids, the field-32767 extension, and hostile input.
"""

import math
import pickle
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex._native import thrift as K
from metaindex._native.thrift import (
    BINARY,
    BOOL,
    BYTE,
    DOUBLE,
    I16,
    I32,
    I64,
    LIST,
    MAP,
    SET,
    STRING,
    STRUCT,
    UUID,
)
from metaindex.errors import DecodeError, EncodeError
from metaindex.parquet.format import Struct, Union
from tests.reference import thrift as R

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCALARS = [BOOL, BYTE, I16, I32, I64, DOUBLE, BINARY, STRING, UUID]


class Inner(Struct):
    FIELDS = ((1, "a", I32, None, False), (2, "b", STRING, None, False))


class Choice(Union):
    FIELDS = ((1, "num", I64, None, False), (2, "inner", STRUCT, Inner, False))


class Every(Struct):
    """One field of every type, ids with gaps, out of order and negative."""

    FIELDS = (
        (1, "flag", BOOL, None, False),
        (2, "i8", BYTE, None, False),
        (3, "i16", I16, None, False),
        (4, "i32", I32, None, False),
        (5, "i64", I64, None, False),
        (6, "dbl", DOUBLE, None, False),
        (7, "bin", BINARY, None, False),
        (8, "text", STRING, None, False),
        (9, "uuid", UUID, None, False),
        (10, "ints", LIST, I64, False),
        (11, "flags", LIST, BOOL, False),
        (12, "tags", SET, STRING, False),
        (13, "kv", MAP, (STRING, I32), False),
        (14, "inner", STRUCT, Inner, False),
        (15, "inners", LIST, Inner, False),
        (40, "far", I32, None, False),
        (20, "back", I64, None, False),
        (-3, "neg", I32, None, False),
        (41, "nested", LIST, (LIST, (MAP, I16, (SET, DOUBLE))), False),
        (42, "choice", STRUCT, Choice, False),
    )


class Required(Struct):
    FIELDS = ((1, "need", I32, None, True), (2, "opt", STRING, None, False))


class Empty(Struct):
    FIELDS = ()


# ------------------------------------------------------------------ strategies


def values(node):
    kind, sub = node
    simple = {
        BOOL: st.booleans(),
        BYTE: st.integers(-128, 127),
        I16: st.integers(-(2**15), 2**15 - 1),
        I32: st.integers(-(2**31), 2**31 - 1),
        I64: st.integers(-(2**63), 2**63 - 1),
        DOUBLE: st.floats(allow_nan=False),
        BINARY: st.binary(max_size=40),
        STRING: st.text(max_size=12),
        UUID: st.binary(min_size=16, max_size=16),
    }
    if kind in simple:
        return simple[kind]
    if kind in (LIST, SET):
        return st.lists(values(sub), max_size=18)
    if kind == MAP:
        return st.dictionaries(values(sub[0]), values(sub[1]), max_size=4)
    return struct_values(sub)


def struct_values(cls):
    fields = {f[1]: values(R.field_node(f[2], f[3])) for f in cls.FIELDS}
    if issubclass(cls, Union):
        return st.sampled_from(sorted(fields)).flatmap(
            lambda n: fields[n].map(lambda v: cls(**{n: v}))
        )
    required = {f[1] for f in cls.FIELDS if f[4]}
    return st.fixed_dictionaries(
        {n: s if n in required else st.none() | s for n, s in fields.items()}
    ).map(lambda d: cls(**d))


element_specs = st.recursive(
    st.sampled_from(SCALARS + [Inner, Choice]),
    lambda inner: (
        st.tuples(st.sampled_from([LIST, SET]), inner)
        | st.tuples(st.just(MAP), st.sampled_from([BYTE, I32, I64, BINARY, STRING]), inner)
    ),
    max_leaves=4,
)


def field_kind(spec):
    """A field's (type, spec) from an element spec."""
    if isinstance(spec, tuple):
        return (spec[0], spec[1]) if spec[0] != MAP else (MAP, spec[1:])
    if isinstance(spec, type):
        return STRUCT, spec
    return spec, None


_counter = [0]


@st.composite
def tables(draw):
    ids = draw(st.lists(st.integers(-40, 300), unique=True, max_size=8))
    fields = tuple(
        (fid, f"f{i}", *field_kind(draw(element_specs)), draw(st.booleans()))
        for i, fid in enumerate(ids)
    )
    _counter[0] += 1
    return type(f"Gen{_counter[0]}", (Struct,), {"FIELDS": fields})


WIRE_SCALARS = [BYTE, I16, I32, I64, DOUBLE, BINARY, UUID]


def wire_of(wire_type, depth):
    """Values of one wire type in the reference's wire-tree form (bool elements: True/False)."""
    scalar = {
        BYTE: st.integers(-128, 127),
        I16: st.integers(-(2**15), 2**15 - 1),
        I32: st.integers(-(2**31), 2**31 - 1),
        I64: st.integers(-(2**63), 2**63 - 1),
        DOUBLE: st.floats(),
        BINARY: st.binary(max_size=12),
        UUID: st.binary(min_size=16, max_size=16),
        R.TRUE: st.booleans(),
    }
    if wire_type in scalar:
        return scalar[wire_type]
    types = st.sampled_from(WIRE_SCALARS + [R.TRUE] + ([LIST, MAP, STRUCT] if depth < 3 else []))
    if wire_type in (LIST, SET):
        return types.flatmap(
            lambda et: st.lists(wire_of(et, depth + 1), max_size=16).map(lambda xs: (et, xs))
        )
    if wire_type == MAP:
        return st.just((None, None, [])) | st.tuples(types, types).flatmap(
            lambda kv: st.lists(
                st.tuples(wire_of(kv[0], depth + 1), wire_of(kv[1], depth + 1)),
                min_size=1,
                max_size=3,
            ).map(lambda items: (kv[0], kv[1], items))
        )
    return st.lists(wire_fields(depth + 1), max_size=4)


def wire_fields(depth=0):
    """One struct field as (id, wire_type, value), of any wire type, nested up to depth 3."""
    ids = st.integers(-300, 300)
    types = st.sampled_from(WIRE_SCALARS + ([LIST, SET, MAP, STRUCT] if depth < 3 else []))
    return st.one_of(
        st.tuples(ids, st.sampled_from([R.TRUE, R.FALSE]), st.none()),
        st.tuples(ids, types).flatmap(
            lambda it: wire_of(it[1], depth).map(lambda v: (it[0], it[1], v))
        ),
    )


def both_decode(data, cls):
    """Decode with the kernel and the reference; both must agree (value or DecodeError)."""
    try:
        ours = K.decode(data, cls)
    except DecodeError:
        ours = DecodeError
    try:
        ref = R.decode(data, cls)
    except DecodeError:
        ref = DecodeError
    assert (ours is DecodeError) == (ref is DecodeError), f"kernel {ours!r} vs reference {ref!r}"
    if ours is not DecodeError:
        assert K.encode(ours) == R.encode(ref), "kernel and reference must re-encode alike"
    return ours


# ------------------------------------------------------------------ round trips


@SETTINGS
@given(st.data())
def test_generated_tables_round_trip_like_reference(data):
    cls = data.draw(tables())
    obj = data.draw(struct_values(cls))
    encoded = K.encode(obj)
    assert encoded == R.encode(obj), "kernel and reference encodings must be identical"
    assert K.decode(encoded, cls) == obj, "kernel decode must give the encoded object back"
    assert R.decode(encoded, cls) == obj, "reference decode must give the encoded object back"


@SETTINGS
@given(struct_values(Every))
def test_every_wire_type_round_trips(obj):
    encoded = obj.to_bytes()
    assert encoded == R.encode(obj), "kernel and reference encodings must be identical"
    back = Every.from_bytes(encoded)
    assert back == obj and back == R.decode(encoded, Every), "decoders must agree with the input"
    assert back.to_bytes() == encoded, "re-encoding must be identical"


@SETTINGS
@given(st.integers(0, 2**64 - 1))
def test_doubles_keep_their_bit_patterns(bits):
    value = struct.unpack("<d", struct.pack("<Q", bits))[0]
    encoded = Every(dbl=value).to_bytes()
    assert encoded[1:9] == struct.pack("<Q", bits), "doubles are 8 little-endian bytes, bit-exact"
    assert Every.from_bytes(encoded).to_bytes() == encoded, "NaN payloads and -0.0 must survive"


def test_exact_bytes_for_headers_and_containers():
    class LongForm(Struct):
        FIELDS = (
            (1, "a", I32, None, False),
            (17, "b", I32, None, False),
            (5, "c", I32, None, False),
            (-1, "d", I32, None, False),
        )

    assert LongForm(a=1, b=2, c=3, d=4).to_bytes() == bytes.fromhex(
        "1502 052204 050a06 050108 00"
    ), "delta 1 is short form; a gap of 16, a negative delta and a negative id are long form"
    assert Every(flag=True).to_bytes() == b"\x11\x00", "bool true lives in the header (type 1)"
    assert Every(flag=False).to_bytes() == b"\x12\x00", "bool false lives in the header (type 2)"
    assert Every(ints=list(range(15))).to_bytes()[:3] == bytes([0xA9, 0xF6, 15]), (
        "15 elements take the long list header: 0xF6 then ULEB size"
    )
    assert Every(ints=[1] * 14).to_bytes()[:2] == bytes([0xA9, 0xE6]), (
        "14 elements fit the short header"
    )
    assert Every(flags=[True, False]).to_bytes() == bytes([0xB9, 0x21, 1, 2, 0]), (
        "bool elements are one byte each, 1 true 2 false, element type 1"
    )
    assert Every(kv={}).to_bytes() == bytes([0xDB, 0, 0]), "an empty map is one 0 byte"
    assert Every(kv={"a": -1}).to_bytes() == bytes([0xDB, 1, 0x85, 1, ord("a"), 1, 0]), (
        "map: ULEB size, key/value types, then pairs"
    )
    assert Every(i8=-2).to_bytes() == bytes([0x23, 0xFE, 0]), "a byte is one raw byte"
    assert Every(inner=Inner()).to_bytes() == bytes([0xEC, 0, 0]), (
        "an empty struct is its stop byte"
    )


def test_none_and_empty_list_are_distinct():
    assert Every(ints=[]).to_bytes() != Every().to_bytes(), "[] is a present, empty list"
    assert Every.from_bytes(Every(ints=[]).to_bytes()).ints == [], "[] must decode as []"
    assert Every.from_bytes(Every().to_bytes()).ints is None, "absent must decode as None"


def test_bool_element_zero_reads_as_false():
    data = bytes([0xB9, 0x31, 1, 0, 2, 0])
    assert Every.from_bytes(data).flags == [True, False, False], "the Thrift spec writes false as 0"
    assert R.decode(data, Every).flags == [True, False, False], "the reference agrees"


def test_invalid_utf8_in_strings_round_trips():
    data = R.write_wire_struct([(8, BINARY, b"\xff\xfeok\x80")])
    obj = Every.from_bytes(data)
    assert obj.text == "\udcff\udcfeok\udc80", "invalid bytes decode with surrogateescape"
    assert obj.to_bytes() == data, "and encode back to the same bytes"


# ------------------------------------------------------------------ unknown fields


@SETTINGS
@given(st.data())
def test_unknown_fields_of_every_type_are_kept_byte_identically(data):
    obj = data.draw(struct_values(Every))
    known = R.read_wire_struct(K.encode(obj))[0]
    declared = {f[0]: R.wire_type_of(f[2]) for f in Every.FIELDS}
    extra = data.draw(st.lists(wire_fields(), max_size=6))
    extra = [f for f in extra if f[0] not in declared or not R.compatible(declared[f[0]], f[1])]
    fields = list(known)
    for f in extra:
        fields.insert(data.draw(st.integers(0, len(fields))), f)
    encoded = R.write_wire_struct(fields)
    decoded = both_decode(encoded, Every)
    assert decoded is not DecodeError, "valid unknown fields must be skipped, not rejected"
    assert len(decoded._unknown or ()) == len(extra), "every unknown field must be kept"
    assert decoded.to_bytes() == encoded, "decode then encode must give the input bytes back"
    assert Every.from_bytes(encoded) == decoded, "decoding is deterministic"


@SETTINGS
@given(st.lists(wire_fields(), max_size=8))
def test_struct_of_only_unknown_fields_round_trips(fields):
    encoded = R.write_wire_struct(fields)
    decoded = both_decode(encoded, Empty)
    assert decoded is not DecodeError, "valid unknown fields must be skipped, not rejected"
    assert decoded.to_bytes() == encoded, "an empty table keeps every field"


def test_wrong_wire_type_for_known_field_is_kept_unknown():
    data = R.write_wire_struct([(4, BINARY, b"abc"), (5, I64, 7)])
    obj = Every.from_bytes(data)
    assert obj.i32 is None, "a known id with another wire type is skipped, as Thrift does"
    assert obj._unknown == [(4, BINARY, b"\x03abc", None)], "and kept raw with its anchor"
    assert obj.i64 == 7 and obj.to_bytes() == data, "the rest decodes; re-encoding is identical"
    with pytest.raises(DecodeError, match="Required.need"):
        Required.from_bytes(R.write_wire_struct([(1, BINARY, b"x")]))


def test_unknown_field_moves_with_its_anchor():
    data = R.write_wire_struct([(4, I32, 1), (30, I64, 9), (5, I64, 2)])
    obj = Every.from_bytes(data)
    assert obj._unknown == [(30, I64, b"\x12", 4)], "anchored after field 4"
    obj.i32 = None
    assert obj.to_bytes() == R.write_wire_struct([(30, I64, 9), (5, I64, 2)]), (
        "with its anchor gone it still goes where field 4 would be, header recomputed"
    )


# ------------------------------------------------------------------ the field-32767 extension


@SETTINGS
@given(struct_values(Every), st.binary(max_size=300))
def test_extension_appended_per_spec_round_trips(obj, ext):
    base = obj.to_bytes()
    extended = R.append_extension(base, ext)
    assert extended[len(base) - 1 : len(base) + 3] == b"\x08\xff\xff\x01", "the spec's header bytes"
    decoded = Every.from_bytes(extended)
    assert decoded.extension == ext, "the payload must be exposed"
    assert decoded.to_bytes() == extended, "and re-encoded byte-identically"
    assert R.decode(extended, Every)._unknown[-1][0] == K.EXTENSION_FIELD_ID == -16384, (
        "a standard zigzag reader sees field id -16384"
    )
    decoded.extension = None
    assert decoded.to_bytes() == base, "removing the extension gives the original bytes"
    obj.extension = ext
    assert obj.to_bytes() == extended, "setting it writes exactly what the spec appends"


def test_extension_replaces_and_follows_every_field():
    obj = Every(i32=1, choice=Choice(num=2))
    obj.extension = b"one"
    obj.extension = b"two"
    data = obj.to_bytes()
    assert data.endswith(b"\x08\xff\xff\x01\x03two\x00"), "one extension, after the last field"
    assert Every.from_bytes(data).extension == b"two", "the replacement is what is read back"
    assert Every().extension is None, "no extension reads as None"


# ------------------------------------------------------------------ the model and errors


def test_model_basics():
    obj = Every(i32=3, inner=Inner(a=1), kv={"x": 1})
    assert obj == Every.from_bytes(obj.to_bytes()), "value equality across a round trip"
    assert obj != Every(i32=4), "different values differ"
    assert pickle.loads(pickle.dumps(obj)) == obj, "structs pickle (process pools)"
    assert repr(Inner(a=1)) == "Inner(a=1)", "repr lists the fields that are set"
    with pytest.raises(TypeError, match="nope"):
        Inner(nope=1)
    assert Choice(num=1).which == "num" and Choice().which is None, "which names the member"


def test_decode_prefix_and_trailing_bytes():
    one = Inner(a=5).to_bytes()
    obj, end = Inner.decode_prefix(b"xx" + one + b"page data", 2)
    assert obj == Inner(a=5) and end == 2 + len(one), "decode_prefix returns the end offset"
    with pytest.raises(DecodeError, match="trailing"):
        Inner.from_bytes(one + b"\x00")
    with pytest.raises(DecodeError) as err:
        Inner.decode_prefix(b"xx" + one[:-1], 2)
    assert err.value.offset == 2 + len(one) - 1, "offsets are relative to the whole buffer"


def test_buffer_types_are_accepted():
    data = Every(bin=b"abc", ints=[1]).to_bytes()
    import numpy as np

    for buf in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        assert Every.from_bytes(buf) == Every(bin=b"abc", ints=[1]), f"{type(buf).__name__} input"
    assert (
        Every(bin=bytearray(b"ab"), text=b"raw").to_bytes()
        == Every(bin=b"ab", text="raw").to_bytes()
    )


@pytest.mark.parametrize(
    "obj, error, match",
    [
        (Required(), EncodeError, "Required.need"),
        (Every(i32=2**31), EncodeError, "Every.i32"),
        (Every(i8=200), EncodeError, "Every.i8"),
        (Every(i64=2**64), EncodeError, "Every.i64"),
        (Every(i32="1"), TypeError, "Every.i32"),
        (Every(i32=True), TypeError, "Every.i32"),
        (Every(flag=1), TypeError, "Every.flag"),
        (Every(bin="text"), TypeError, "Every.bin"),
        (Every(uuid=b"short"), EncodeError, "Every.uuid"),
        (Every(ints=(1, "x")), TypeError, "Every.ints"),
        (Every(kv=[("a", 1)]), TypeError, "Every.kv"),
        (Every(inner=Choice(num=1)), TypeError, "Every.inner"),
        (Choice(num=1, inner=Inner()), EncodeError, "exactly one"),
        (Choice(), EncodeError, "exactly one"),
        (Every(text="\ud800"), EncodeError, "Every.text"),
    ],
)
def test_encode_rejects_bad_values(obj, error, match):
    with pytest.raises(error, match=match):
        obj.to_bytes()


def test_encode_rejects_malformed_unknown_fields():
    obj = Every()
    for bad in [(1, 99, b"", None), (1, I32, b"\x80", None), (1, R.TRUE, b"x", None), "junk"]:
        obj._unknown = [bad]
        with pytest.raises(EncodeError):
            obj.to_bytes()


def test_malformed_tables_are_rejected():
    bad = [
        ((1, "a", 99, None, False),),
        ((1, "a", I32, None, False), (1, "b", I32, None, False)),
        ((1, "a", MAP, (LIST, I32), False),),
        ((1, "a", LIST, "x", False),),
        ((1, "_unknown", I32, None, False),),
        ((70000, "a", I32, None, False),),
    ]
    for fields in bad:
        with pytest.raises(TypeError):
            type("Bad", (Struct,), {"FIELDS": fields})
    with pytest.raises(TypeError, match="clash"):
        type("Bad", (Struct,), {"FIELDS": ((1, "to_bytes", I32, None, False),)})


# ------------------------------------------------------------------ hostile input


def valid_samples():
    inner = Inner(a=-7, b="héllo")
    return [
        Every(
            flag=True,
            i8=-1,
            i16=300,
            i32=-70000,
            i64=2**40,
            dbl=1.5,
            bin=b"\x00\xff",
            text="t",
            uuid=bytes(range(16)),
            ints=list(range(20)),
            flags=[True, False] * 9,
            tags=["a"],
            kv={"k": 1, "l": -1},
            inner=inner,
            inners=[inner, Inner()],
            far=1,
            back=2,
            neg=3,
            nested=[[{1: [0.5, -0.0]}], []],
            choice=Choice(inner=inner),
        ).to_bytes(),
        Required(need=1, opt="x").to_bytes(),
        R.append_extension(Every(i32=1).to_bytes(), b"ext-payload"),
    ]


@pytest.mark.hostile
@pytest.mark.parametrize("sample", range(3))
def test_every_strict_prefix_raises(sample):
    data = valid_samples()[sample]
    cls = Required if sample == 1 else Every
    for n in range(len(data)):
        with pytest.raises(DecodeError):
            K.decode(data[:n], cls)
        with pytest.raises(DecodeError):
            K.decode_prefix(data[:n], cls)


@pytest.mark.hostile
@SETTINGS
@given(
    st.sampled_from([0, 1, 2]),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_byte_flips_decode_like_reference_or_raise(sample, flips):
    data = bytearray(valid_samples()[sample])
    for pos, value in flips:
        data[pos % len(data)] = value
    both_decode(bytes(data), Required if sample == 1 else Every)


@pytest.mark.hostile
@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes_decode_like_reference_or_raise(data):
    both_decode(data, Every)
    both_decode(data, Empty)


def nested_lists(depth):
    return bytes([0x19]) * depth + bytes([0x10]) if depth else bytes([0x10])


@pytest.mark.hostile
def test_depth_bomb_raises_and_the_limit_is_exact():
    def unknown_structs(n):  # field 99: a struct holding a struct ... n deep
        return b"\x0c\xc6\x01" * n + b"\x00" * (n + 1)

    def lists(n):  # field 99: list<list<...>> n deep
        return b"\x09\xc6\x01" + b"\x19" * (n - 1) + b"\x09" + b"\x00"

    for make in (unknown_structs, lists):
        depths = [n for n in range(1, 80) if both_decode(make(n), Empty) is not DecodeError]
        assert depths == list(range(1, K.MAX_DEPTH)), (
            f"{make.__name__}: nesting up to the limit only"
        )
    with pytest.raises(DecodeError, match="nesting"):
        Empty.from_bytes(b"\x0c\xc6\x01" * 100000 + b"\x00" * 100001)


@pytest.mark.hostile
@pytest.mark.parametrize(
    "data",
    [
        bytes([0xA9, 0xF6]) + R.uleb(2**31 - 1) + b"\x00" * 8,  # list of 2**31-1 i64
        bytes([0xA9, 0xF6]) + R.uleb(2**40) + b"\x00" * 8,  # list count beyond i32
        bytes([0xDB]) + R.uleb(2**31 - 1) + b"\x85" + b"\x00" * 8,  # map of 2**31-1 entries
        bytes([0x69, 0xF7]) + R.uleb(100) + b"\x00" * 799,  # 100 doubles, 799 bytes
        bytes([0x78]) + R.uleb(2**62) + b"x",  # binary longer than input
        bytes([0x09]) + R.zigzag(999) + bytes([0xFC]) + R.uleb(2**31 - 1) + b"\x00" * 8,  # skipped
    ],
)
def test_huge_counts_raise_fast_without_allocating(data):
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            Every.from_bytes(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"rejecting a hostile count allocated {peak} bytes"


@pytest.mark.hostile
@pytest.mark.parametrize(
    "data, match",
    [
        (bytes([0xB9, 0x21, 3, 0]), "bool element"),  # bool element byte 3
        (bytes([0x0E]), "compact type"),  # type nibble 14
        (bytes([0x10]), "compact type"),  # delta 1, type 0
        (bytes([0x45]) + R.uleb(2**32) + b"\x00", "i32"),  # i32 varint over 32 bits
        (bytes([0x34]) + R.uleb(2**16) + b"\x00", "i16"),  # i16 varint over 16 bits
        (bytes([0x05]) + R.uleb(2**16) + b"\x00", "16 bits"),  # field id over 16 bits
        (bytes([0x45, 2, 0x05, 8, 4, 0]), "appears twice"),  # field 4 twice
        (bytes([0xA9, 0x15, 2, 0]), "element type"),  # list<i64> holding i32
        (bytes([0xDB, 2, 0x85, 1, 97, 2, 1, 97, 4, 0]), "duplicate map key"),
        (bytes([0x05]) + R.zigzag(32767) + bytes([2, 0xF5]) + b"\x02\x00", "overflows"),
        (bytes([0x05]) + b"\x80" * 11, "varint"),  # 11-byte field id varint
    ],
)
def test_invalid_encodings_raise(data, match):
    with pytest.raises(DecodeError, match=match):
        Every.from_bytes(data)
    with pytest.raises(DecodeError):
        R.decode(data, Every)


@pytest.mark.hostile
def test_decode_prefix_rejects_bad_offsets():
    for offset in (-1, 5):
        with pytest.raises(DecodeError):
            Inner.decode_prefix(b"\x00", offset)


def test_floats_in_maps_and_sets_round_trip():
    obj = Every(nested=[[{-5: [math.inf, -math.inf, 0.0]}]])
    assert Every.from_bytes(obj.to_bytes()) == obj, "nested containers of doubles round-trip"
    assert R.decode(obj.to_bytes(), Every) == obj, "and the reference agrees"
