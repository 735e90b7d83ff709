"""The PME kernel (cython_ext/crypto) against the pure-Python reference (tests/reference/crypto)."""

import numpy as np
import pytest
from cryptography.exceptions import InvalidTag
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native import crypto as k
from metaindex.errors import DecodeError, EncodeError, IntegrityError
from tests.reference import crypto as ref

KEYS = {16: bytes(range(16)), 24: bytes(range(24)), 32: bytes(range(32))}
FILE_AAD = b"prefix/file-7" + bytes.fromhex("0102030405060708")
ordinal = st.integers(0, 32767)
module_types = st.integers(0, 9)


@settings(max_examples=150, deadline=None)
@given(module_types, ordinal, ordinal, ordinal, st.binary(max_size=40))
def test_aad_matches_reference(module_type, rg, col, page, prefix):
    got = k.module_aad(prefix, module_type, rg, col, page)
    assert got == ref.aad(prefix, module_type, rg, col, page), "AAD layout as the spec's table"


def test_aad_layout_by_hand():
    assert k.module_aad(b"F", k.FOOTER) == b"F\x00", "footer: file AAD + type only"
    assert k.module_aad(b"F", k.DATA_PAGE, 1, 2, 0x0304) == b"F\x02\x01\x00\x02\x00\x04\x03"
    assert k.module_aad(b"F", k.DICTIONARY_PAGE, 1, 2, 99) == b"F\x03\x01\x00\x02\x00", (
        "dictionary pages carry no page ordinal"
    )
    assert k.module_aad(b"F", k.BLOOM_FILTER_BITSET, 32767, 0) == b"F\x09\xff\x7f\x00\x00"


@pytest.mark.parametrize("field", ["row_group", "column", "page"])
@pytest.mark.parametrize("bad", [32768, 40000, -1])
def test_ordinal_outside_int16_is_a_clear_error(field, bad):
    args = {"row_group": 0, "column": 0, "page": 0}
    args[field] = bad
    name = field.replace("_", " ")
    with pytest.raises(EncodeError, match=f"{name} ordinal {bad} is outside 0..32767"):
        k.module_aad(b"", k.DATA_PAGE_HEADER, **args)
    cipher = k.ModuleCipher(KEYS[16], b"")
    with pytest.raises(EncodeError, match=f"{name} ordinal"):
        cipher.encrypt(k.DATA_PAGE, b"x", **args)
    with pytest.raises(DecodeError, match=f"{name} ordinal"):
        cipher.decrypt(k.DATA_PAGE, bytes(40), **args)


def test_unknown_module_type():
    with pytest.raises(ValueError, match="unknown module type 10"):
        k.module_aad(b"", 10, 0, 0)


def test_bad_key_length():
    for n in (0, 8, 15, 17, 31, 33, 64):
        with pytest.raises(EncodeError, match=f"not {n}"):
            k.ModuleCipher(bytes(n), b"")


@pytest.mark.parametrize("key_bits", [128, 192, 256])
@pytest.mark.parametrize("ctr_pages", [False, True])
@settings(max_examples=60, deadline=None)
@given(
    module_type=module_types, rg=ordinal, col=ordinal, page=ordinal, plain=st.binary(max_size=300)
)
def test_frames_match_reference(key_bits, ctr_pages, module_type, rg, col, page, plain):
    key = KEYS[key_bits // 8]
    cipher = k.ModuleCipher(key, FILE_AAD, ctr_pages)
    ctr = ref.uses_ctr(module_type, ctr_pages)
    aad = ref.aad(FILE_AAD, module_type, rg, col, page)
    frame = bytes(cipher.encrypt(module_type, plain, rg, col, page))
    assert len(frame) == len(plain) + (16 if ctr else 32), "frame overhead: 4 + 12 (+ 16)"
    assert int.from_bytes(frame[:4], "little") == len(frame) - 4, "length field excludes itself"
    nonce = frame[4:16]
    assert frame == ref.encrypt(key, aad, plain, nonce, ctr), (
        "same nonce -> byte-identical frame to the reference"
    )
    assert ref.decrypt(key, aad, frame, ctr) == (plain, len(frame))
    theirs = ref.encrypt(key, aad, plain, bytes(reversed(nonce)), ctr) + b"trailing"
    out, used = cipher.decrypt(module_type, theirs, rg, col, page)
    assert bytes(out) == plain and used == len(theirs) - 8, "kernel decrypts the reference's frame"


def test_nonces_are_fresh():
    cipher = k.ModuleCipher(KEYS[16], FILE_AAD)
    nonces = {bytes(cipher.encrypt(k.COLUMN_INDEX, b"same", 0, 0))[4:16] for _ in range(2000)}
    assert len(nonces) == 2000, "every module gets a fresh random nonce"


@pytest.mark.parametrize(
    "wrap", [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, np.uint8)]
)
def test_any_contiguous_buffer(wrap):
    cipher = k.ModuleCipher(KEYS[32], FILE_AAD, True)
    for mt in (k.DATA_PAGE, k.DATA_PAGE_HEADER):
        frame = cipher.encrypt(mt, wrap(b"payload" * 50), 3, 4, 5)
        out, used = cipher.decrypt(mt, wrap(bytes(frame)), 3, 4, 5)
        assert bytes(out) == b"payload" * 50 and used == len(frame)
    assert (
        bytes(cipher.decrypt(k.FOOTER, memoryview(bytes(cipher.encrypt(k.FOOTER, b""))))[0]) == b""
    )


def test_swapped_or_wrong_key_modules_fail_naming_the_module():
    cipher = k.ModuleCipher(KEYS[16], FILE_AAD)
    frame = bytes(cipher.encrypt(k.DATA_PAGE, b"rows", 1, 2, 3))
    cases = [
        (cipher, (k.DATA_PAGE, frame, 1, 2, 4), r"data page \(row group 1, column 2, page 4\)"),
        (cipher, (k.DATA_PAGE, frame, 0, 2, 3), r"row group 0, column 2, page 3"),
        (cipher, (k.DATA_PAGE, frame, 1, 3, 3), r"column 3"),
        (cipher, (k.DATA_PAGE_HEADER, frame, 1, 2, 3), r"data page header"),
        (
            k.ModuleCipher(KEYS[16], FILE_AAD[:-1] + b"X"),
            (k.DATA_PAGE, frame, 1, 2, 3),
            "data page",
        ),
        (k.ModuleCipher(bytes(16), FILE_AAD), (k.DATA_PAGE, frame, 1, 2, 3), "data page"),
    ]
    for c, args, what in cases:
        with pytest.raises(IntegrityError, match=what + ".*failed AES-GCM verification"):
            c.decrypt(*args)


@pytest.mark.hostile
def test_every_byte_flip_of_a_gcm_frame_is_detected():
    cipher = k.ModuleCipher(KEYS[24], FILE_AAD)
    frame = bytes(cipher.encrypt(k.OFFSET_INDEX, b"0123456789abcdef", 7, 8))
    for i in range(len(frame)):
        for bit in (0x01, 0x80):
            bad = bytearray(frame)
            bad[i] ^= bit
            with pytest.raises((IntegrityError, DecodeError)):
                cipher.decrypt(k.OFFSET_INDEX, bytes(bad), 7, 8)


@pytest.mark.hostile
@pytest.mark.parametrize("ctr_pages", [False, True])
def test_every_strict_prefix_raises_decode_error(ctr_pages):
    cipher = k.ModuleCipher(KEYS[16], FILE_AAD, ctr_pages)
    frame = bytes(cipher.encrypt(k.DATA_PAGE, b"abc" * 10, 0, 0, 0))
    for n in range(len(frame)):
        with pytest.raises(DecodeError):
            cipher.decrypt(k.DATA_PAGE, frame[:n], 0, 0, 0)


@pytest.mark.hostile
@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=80), module_type=module_types, ctr=st.booleans())
def test_random_bytes_decode_or_raise_typed(data, module_type, ctr):
    cipher = k.ModuleCipher(KEYS[16], FILE_AAD, ctr)
    try:
        out, used = cipher.decrypt(module_type, data, 0, 0, 0)
    except (DecodeError, IntegrityError):
        return
    assert ref.uses_ctr(module_type, ctr), "only unauthenticated CTR frames can pass"
    assert used <= len(data) and len(out) == used - 16


@pytest.mark.hostile
def test_length_field_that_lies():
    cipher = k.ModuleCipher(KEYS[16], FILE_AAD)
    frame = bytearray(cipher.encrypt(k.COLUMN_INDEX, b"x" * 10, 0, 0))
    for lie in (0, 27, len(frame) - 3, 0xFFFFFFFF):
        frame[:4] = lie.to_bytes(4, "little")
        with pytest.raises(DecodeError, match="frame length"):
            cipher.decrypt(k.COLUMN_INDEX, bytes(frame), 0, 0)


def test_footer_signature_matches_reference_and_detects_changes():
    cipher = k.ModuleCipher(KEYS[16], FILE_AAD)
    footer = bytes(range(200))
    sig = cipher.sign_footer(footer)
    assert len(sig) == 28
    assert sig == ref.footer_signature(KEYS[16], FILE_AAD, footer, sig[:12]), (
        "signature = nonce + GCM tag under the footer AAD"
    )
    cipher.verify_footer(footer, sig)
    cipher.verify_footer(memoryview(footer), bytearray(sig))
    for i in range(0, len(footer), 17):
        bad = bytearray(footer)
        bad[i] ^= 4
        with pytest.raises(IntegrityError, match="footer signature does not verify"):
            cipher.verify_footer(bytes(bad), sig)
    for i in range(28):
        bad = bytearray(sig)
        bad[i] ^= 1
        with pytest.raises(IntegrityError):
            cipher.verify_footer(footer, bytes(bad))
    with pytest.raises(IntegrityError):
        k.ModuleCipher(KEYS[16], FILE_AAD + b"!").verify_footer(footer, sig)
    with pytest.raises(DecodeError, match="27 bytes"):
        cipher.verify_footer(footer, sig[:27])


def test_reference_agrees_on_tag_failure():
    """Sanity of the reference itself: a flipped tag fails there too."""
    frame = bytearray(ref.encrypt(KEYS[16], b"a", b"text", bytes(12), False))
    frame[-1] ^= 1
    with pytest.raises(InvalidTag):
        ref.decrypt(KEYS[16], b"a", bytes(frame), False)
