"""Encoding kernels vs pyarrow (Arrow C++) and fastparquet, single thread, same run.

For each data set and encoding we time our encode and decode of the values alone, and the
peers' write and read of a one-column, uncompressed, single-row-group file using the same
encoding. The peers' cost therefore includes file framing (page headers, footer, Arrow array
construction); ours is the kernel only. Ratios > 1 mean we are faster. fastparquet appears where
it writes (PLAIN, dictionary) or reads (every encoding it supports) that encoding.

Usage: python bench/kernels.py [--quick]   (--quick: 1/10 of the data, 3 runs)
"""

from __future__ import annotations

import io
import sys
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _common import machine, median_time, print_table, single_thread

from metaindex.parquet import encoding as enc
from metaindex.parquet import values as vals

QUICK = "--quick" in sys.argv
SCALE = 10 if QUICK else 1
RUNS = 3 if QUICK else 5


def datasets():
    rng = np.random.default_rng(7)
    n = 10_000_000 // SCALE
    small = rng.integers(0, 1000, n, dtype=np.int64)
    sorted_ = np.sort(rng.integers(0, 1 << 40, n, dtype=np.int64))
    doubles = rng.standard_normal(n)
    m = 1_000_000 // SCALE
    strings = pa.array([f"s{v}" for v in rng.integers(0, 50_000, m)], pa.string())
    return [
        (
            "10M int64 small range",
            pa.array(small),
            vals.INT64,
            ["PLAIN", "DICT", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"],
        ),
        ("10M int64 sorted", pa.array(sorted_), vals.INT64, ["PLAIN", "DELTA_BINARY_PACKED"]),
        ("10M float64", pa.array(doubles), vals.DOUBLE, ["PLAIN", "BYTE_STREAM_SPLIT"]),
        (
            "1M short strings",
            strings,
            vals.BYTE_ARRAY,
            ["PLAIN", "DICT", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY"],
        ),
    ]


def ours(values, ptype, encoding):
    n = vals.count(values, ptype)
    if encoding == "DICT":

        def encode():
            d, idx = enc.build_dictionary(values, ptype, 0, 1 << 30)
            return enc.encode_values(d, ptype, enc.PLAIN), enc.encode_indices(
                idx, vals.count(d, ptype)
            )

        dict_page, idx_page = encode()
        d, _ = enc.decode_values(
            dict_page,
            vals.count(enc.build_dictionary(values, ptype, 0, 1 << 30)[0], ptype),
            ptype,
            enc.PLAIN,
        )

        def decode():
            idx, _ = enc.decode_indices(idx_page, n)
            return enc.take(d, idx, ptype)

        return encode, decode
    code = getattr(enc, encoding)
    page = enc.encode_values(values, ptype, code)
    return (
        lambda: enc.encode_values(values, ptype, code),
        lambda: enc.decode_values(page, n, ptype, code),
    )


def pyarrow_io(arr, encoding):
    table = pa.table({"c": arr})
    opts = (
        {"use_dictionary": True}
        if encoding == "DICT"
        else {"use_dictionary": False, "column_encoding": {"c": encoding}}
    )
    opts.update(
        compression="none", write_statistics=False, row_group_size=len(arr), data_page_size=1 << 30
    )

    def write():
        buf = io.BytesIO()
        pq.write_table(table, buf, **opts)
        return buf.getvalue()

    data = write()
    return write, (lambda: pq.read_table(io.BytesIO(data), use_threads=False)), data


def fastparquet_io(arr, encoding, pyarrow_file):
    try:
        import fastparquet
        import pandas as pd  # noqa: F401
    except ImportError:
        return None, None
    import os
    import tempfile

    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "in.parquet")
    with open(path, "wb") as fh:
        fh.write(pyarrow_file)
    read = None
    try:
        fastparquet.ParquetFile(path).to_pandas()
        read = lambda: fastparquet.ParquetFile(path).to_pandas()  # noqa: E731
    except Exception:
        pass
    write = None
    if encoding in ("PLAIN", "DICT"):
        df = pa.table({"c": arr}).to_pandas()
        out = os.path.join(tmp, "out.parquet")
        kw = {"compression": None, "stats": False}
        if encoding == "DICT":
            # fastparquet dictionary-encodes pandas categoricals only: building the categories
            # is part of its cost, as building the dictionary is part of ours.
            kw["object_encoding"] = "utf8" if pa.types.is_string(arr.type) else "infer"

            def write():
                fastparquet.write(out, df.assign(c=df["c"].astype("category")), **kw)
        else:

            def write():
                fastparquet.write(out, df, **kw)

        try:
            write()
        except Exception:
            write = None
    return write, read


def main():
    single_thread()
    warnings.simplefilter("ignore")
    print(f"machine: {machine()}")
    print(f"runs: median of {RUNS}{' (quick: 1/10 data)' if QUICK else ''}\n")
    rows = []
    for label, arr, ptype, encodings in datasets():
        values = vals.from_arrow(arr, ptype)
        n = len(arr)
        for encoding in encodings:
            our_enc, our_dec = ours(values, ptype, encoding)
            t_enc = median_time(our_enc, RUNS)
            t_dec = median_time(our_dec, RUNS)
            pa_w, pa_r, pa_file = pyarrow_io(arr, encoding)
            t_pw, t_pr = median_time(pa_w, RUNS), median_time(pa_r, RUNS)
            fp_w, fp_r = fastparquet_io(arr, encoding, pa_file)
            t_fw = median_time(fp_w, RUNS) if fp_w else None
            t_fr = median_time(fp_r, RUNS) if fp_r else None
            rows.append(
                [
                    label,
                    encoding,
                    n / t_enc / 1e6,
                    n / t_dec / 1e6,
                    t_pw / t_enc,
                    t_pr / t_dec,
                    None if t_fw is None else t_fw / t_enc,
                    None if t_fr is None else t_fr / t_dec,
                ]
            )
            print(f"  {label:24s} {encoding:24s} done", file=sys.stderr)
    print_table(
        [
            "data",
            "encoding",
            "ours enc Mv/s",
            "ours dec Mv/s",
            "× pyarrow write",
            "× pyarrow read",
            "× fastparquet write",
            "× fastparquet read",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
