"""Parquet Modular Encryption cost: encrypted vs plain files, module framing vs raw AES-GCM.

1. Files: a ~100 MB table (int64, float64, string), 1 MiB pages, written to and read from
   memory, plain and encrypted (AES_GCM_V1 and AES_GCM_CTR_V1, uniform footer key), same run;
   "raw" (uncompressed, no dictionary: AES is the only per-byte work added to a near-memcpy
   path, the worst case) and "zstd+dict" (the writer's usual options). pyarrow does the same
   with its CryptoFactory, for context. Target: our encryption overhead <= 5%.
2. Modules: ``ModuleCipher.encrypt`` / ``decrypt`` (fresh nonce, AAD, length-prefixed frame
   allocated and filled in place) vs raw ``AESGCM.encrypt_into`` / ``decrypt_into`` on the same
   1 MiB buffers into a preallocated buffer, plus the one-shot ``AESGCM.encrypt``.
   Target: module throughput >= 0.8x raw.

Each pair (plain/encrypted, raw/ours) is timed interleaved, RUNS times, in process CPU time
(everything here is single-threaded, and other processes on a shared machine then cost us
little), and the fastest run of each side is kept: interference only ever adds time.

Usage: python bench/crypto.py [--quick]   (--quick: 1/10 of the rows, 3 runs)
"""

from __future__ import annotations

import base64
import io
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
from _common import machine, print_table, single_thread
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from metaindex._native import crypto as kernel
from metaindex.crypto import FileDecryptionProperties, FileEncryptionProperties
from metaindex.parquet.reader import read_table
from metaindex.parquet.writer import write_table

QUICK = "--quick" in sys.argv
ROWS = 350_000 if QUICK else 3_500_000
RUNS = 3 if QUICK else 9
MODULE = 1 << 20
MODULES = 64
KEY = os.urandom(16)
MASTER = {"m": os.urandom(16)}


def paired(a, b, runs: int = RUNS) -> tuple[float, float]:
    """Fastest CPU time of ``a()`` and of ``b()``, timed alternately (after one warm-up each)."""
    a(), b()
    ta, tb = [], []
    for i in range(runs):
        for fn, out in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            t0 = time.process_time()
            fn()
            out.append(time.process_time() - t0)
    return min(ta), min(tb)


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table(
        {
            "id": pa.array(rng.integers(0, 1 << 50, n)),
            "value": pa.array(rng.standard_normal(n)),
            "name": pa.array(
                np.char.add("customer-", rng.integers(0, 10**6, n).astype(str)).astype(object)
            ),
        }
    )


class _Kms(pe.KmsClient):
    def __init__(self, config):
        pe.KmsClient.__init__(self)

    def wrap_key(self, key, master):
        nonce = os.urandom(12)
        return base64.b64encode(nonce + AESGCM(MASTER[master]).encrypt(nonce, key, None)).decode()

    def unwrap_key(self, wrapped, master):
        raw = base64.b64decode(wrapped)
        return AESGCM(MASTER[master]).decrypt(raw[:12], raw[12:], None)


CONFIGS = {  # writer options: the worst case for the overhead, and the usual options
    "raw": {"compression": "none", "use_dictionary": False, "data_page_size": 1 << 20},
    "zstd+dict": {"compression": "zstd", "use_dictionary": True, "data_page_size": 1 << 20},
}


def our_rows(table: pa.Table, config: str, algorithm: str) -> list[list]:
    options = CONFIGS[config]
    props = FileEncryptionProperties(KEY, algorithm=algorithm)
    keys = FileDecryptionProperties(footer_key=KEY)

    def write(p):
        sink = io.BytesIO()
        write_table(table, sink, encryption_properties=p, **options)
        return sink.getvalue()

    plain_blob, enc_blob = write(None), write(props)
    mb = table.nbytes / 1e6
    plain, enc = paired(lambda: write(None), lambda: write(props))
    rows = [
        [f"metaindex write {config} {algorithm}", mb / plain, mb / enc, 100 * (enc / plain - 1)]
    ]
    plain, enc = paired(
        lambda: read_table(plain_blob), lambda: read_table(enc_blob, decryption_properties=keys)
    )
    rows.append(
        [f"metaindex read {config} {algorithm}", mb / plain, mb / enc, 100 * (enc / plain - 1)]
    )
    return rows


def pyarrow_rows(table: pa.Table, config: str) -> list[list]:
    options = CONFIGS[config]
    factory = pe.CryptoFactory(lambda c: _Kms(c))
    props = factory.file_encryption_properties(
        pe.KmsConnectionConfig(),
        pe.EncryptionConfiguration("m", uniform_encryption=True, double_wrapping=False),
    )
    dprops = factory.file_decryption_properties(pe.KmsConnectionConfig())

    def write(p):
        sink = io.BytesIO()
        pq.write_table(table, sink, encryption_properties=p, **options)
        return sink.getvalue()

    plain_blob, enc_blob = write(None), write(props)
    mb = table.nbytes / 1e6
    plain, enc = paired(lambda: write(None), lambda: write(props))
    rows = [[f"pyarrow write {config} AES_GCM_V1", mb / plain, mb / enc, 100 * (enc / plain - 1)]]
    plain, enc = paired(
        lambda: pq.read_table(io.BytesIO(plain_blob), use_threads=False),
        lambda: pq.read_table(
            io.BytesIO(enc_blob), use_threads=False, decryption_properties=dprops
        ),
    )
    rows.append(
        [f"pyarrow read {config} AES_GCM_V1", mb / plain, mb / enc, 100 * (enc / plain - 1)]
    )
    return rows


def file_rows(table: pa.Table) -> list[list]:
    rows = []
    for config in CONFIGS:
        for algorithm in ("AES_GCM_V1", "AES_GCM_CTR_V1"):
            rows += our_rows(table, config, algorithm)
        rows += pyarrow_rows(table, config)
    return rows


def module_rows() -> list[list]:
    data = [os.urandom(MODULE) for _ in range(MODULES)]
    gcm = AESGCM(KEY)
    nonce = os.urandom(12)
    aad = kernel.module_aad(os.urandom(8), kernel.DATA_PAGE, 0, 0, 0)
    out = bytearray(MODULE + 16)
    cipher = kernel.ModuleCipher(KEY, os.urandom(8))
    ctr = kernel.ModuleCipher(KEY, os.urandom(8), True)
    frames = [bytes(cipher.encrypt(kernel.DATA_PAGE, d, 0, 0, i)) for i, d in enumerate(data)]
    sealed = [gcm.encrypt(nonce, d, aad) for d in data]
    plain = bytearray(MODULE)
    gb = MODULES * MODULE / 2**30

    def raw_encrypt():
        for d in data:
            gcm.encrypt_into(nonce, d, aad, out)

    def raw_decrypt():
        for s in sealed:
            gcm.decrypt_into(nonce, s, aad, plain)

    def module_encrypt():
        for i, d in enumerate(data):
            cipher.encrypt(kernel.DATA_PAGE, d, 0, 0, i)

    def module_decrypt():
        for i, f in enumerate(frames):
            cipher.decrypt(kernel.DATA_PAGE, f, 0, 0, i)

    def oneshot():
        for d in data:
            gcm.encrypt(nonce, d, aad)

    def ctr_encrypt():
        for i, d in enumerate(data):
            ctr.encrypt(kernel.DATA_PAGE, d, 0, 0, i)

    raw_e, mod_e = paired(raw_encrypt, module_encrypt)
    raw_d, mod_d = paired(raw_decrypt, module_decrypt)
    raw_e2, one = paired(raw_encrypt, oneshot)
    raw_e3, ctr_e = paired(raw_encrypt, ctr_encrypt)
    raw_e = min(raw_e, raw_e2, raw_e3)
    return [
        ["GCM encrypt: ModuleCipher vs encrypt_into", gb / raw_e, gb / mod_e, raw_e / mod_e],
        ["GCM decrypt: ModuleCipher vs decrypt_into", gb / raw_d, gb / mod_d, raw_d / mod_d],
        ["GCM one-shot AESGCM.encrypt vs encrypt_into", gb / raw_e, gb / one, raw_e / one],
        [
            "CTR page encrypt: ModuleCipher vs GCM encrypt_into",
            gb / raw_e,
            gb / ctr_e,
            raw_e / ctr_e,
        ],
    ]


def main():
    single_thread()
    print(f"machine: {machine()}")
    table = make_table(ROWS)
    print(
        f"table: {ROWS:,} rows, {table.nbytes / 1e6:.0f} MB in Arrow, 1 MiB pages; fastest "
        f"of {RUNS} interleaved runs; MB/s of Arrow data\n"
    )
    print_table(["files", "plain MB/s", "encrypted MB/s", "overhead %"], file_rows(table))
    print(f"\nmodules: {MODULES} x {MODULE >> 20} MiB, one key\n")
    print_table(["modules", "raw GB/s", "ours GB/s", "ours / raw"], module_rows())


if __name__ == "__main__":
    main()
