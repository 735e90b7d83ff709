"""``metaindex inspect FILE``: what a Parquet file's footer says, as one JSON-ready dict.

Footer (version, writer, rows, key/value metadata), schema, row groups and their column chunks
(encodings, codec, sizes, statistics with our trust verdict), the page index and bloom filters of
each chunk, and Parquet Modular Encryption: algorithm, footer mode, and which columns are under
which master key label — read from the key material, so no key is needed:

* a plaintext file, or an encrypted one with a signed plaintext footer (PAR1), reads without
  keys; encrypted columns then show the metadata their readable copy keeps (no statistics) and
  their page index / bloom filter contents stay sealed;
* an encrypted footer (PARE) shows only what its ``FileCryptoMetaData`` says (algorithm, the
  footer key label) unless a KMS is given; with one, everything decodes (and a signed plaintext
  footer is verified).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metaindex.errors import DecodeError, KeyAccessError, MetaIndexError
from metaindex.parquet import format as fmt
from metaindex.parquet import statistics as stats_mod

__all__ = ["inspect_file", "decryption_properties"]

_SHORT_VALUE = 120  # key/value metadata values up to this many characters are shown
_RAW_BOUND = 32  # untrusted statistics bytes are shown as hex up to this many bytes


def decryption_properties(kms_spec: str):
    """``FileDecryptionProperties`` unwrapping keys through the KMS named by ``kms_spec``."""
    from metaindex.crypto import CryptoFactory, KmsConnectionConfig
    from metaindex.crypto.kms_spec import kms_factory

    return CryptoFactory(kms_factory(kms_spec)).file_decryption_properties(KmsConnectionConfig())


def _enum(enum_cls, value):
    try:
        return enum_cls(value).name
    except ValueError:
        return value


def _key_info(key_metadata) -> dict:
    """What key metadata says about its key: the master key label from PKMT1 key material."""
    if not key_metadata:
        return {"label": None, "key_metadata": None}
    from metaindex.crypto import KeyMaterial

    try:
        material = KeyMaterial.parse(key_metadata)
    except MetaIndexError as exc:  # explicit keys with free-form metadata, or foreign material
        raw = bytes(key_metadata)
        try:
            shown = raw.decode("utf-8")
        except UnicodeDecodeError:
            shown = raw.hex()
        return {"label": None, "key_metadata": shown[:200], "note": str(exc)}
    info = {"label": material.master_key_id, "double_wrapping": material.double_wrapping}
    if material.is_footer_key:
        info["kms_instance_id"] = material.kms_instance_id
        info["kms_instance_url"] = material.kms_instance_url
    return info


def _algorithm(algorithm) -> dict:
    name = algorithm.which if algorithm is not None else None
    params = getattr(algorithm, name) if name else None
    out = {"name": name}
    if params is not None:
        out["aad_prefix_stored"] = params.aad_prefix is not None
        out["aad_prefix_supplied_by_reader"] = bool(params.supply_aad_prefix)
        out["aad_file_unique"] = (
            None if params.aad_file_unique is None else bytes(params.aad_file_unique).hex()
        )
    return out


def _logical(logical) -> str | None:
    if logical is None or logical.which is None:
        return None
    name = logical.which
    value = getattr(logical, name)
    if name == "DECIMAL":
        return f"DECIMAL({value.precision},{value.scale})"
    if name == "INTEGER":
        return f"INTEGER({value.bitWidth},{'signed' if value.isSigned else 'unsigned'})"
    if name in ("TIMESTAMP", "TIME"):
        unit = value.unit.which if value.unit is not None else "?"
        return f"{name}({unit},{'UTC' if value.isAdjustedToUTC else 'local'})"
    return name


def _schema(elements: list) -> list:
    """The flattened schema with each element's depth (the root is depth 0)."""
    out = []
    stack: list[int] = []  # children still expected at each open group
    for e in elements:
        depth = len(stack)
        entry = {
            "name": e.name,
            "depth": depth,
            "repetition": _enum(fmt.FieldRepetitionType, e.repetition_type)
            if e.repetition_type is not None
            else None,
        }
        if e.num_children:
            entry["children"] = e.num_children
        else:
            entry["physical_type"] = _enum(fmt.Type, e.type) if e.type is not None else None
            if e.type_length:
                entry["type_length"] = e.type_length
        entry["logical_type"] = _logical(e.logicalType)
        entry["converted_type"] = (
            _enum(fmt.ConvertedType, e.converted_type) if e.converted_type is not None else None
        )
        if e.field_id is not None:
            entry["field_id"] = e.field_id
        out.append(entry)
        if stack:
            stack[-1] -= 1
        if e.num_children:
            stack.append(e.num_children)
        while stack and stack[-1] == 0:
            stack.pop()
    return out


def _logical_bound(value, element):
    """A timestamp, date or time bound as its logical value (physical ints otherwise read
    as, say, 1735689656743921); anything else unchanged."""
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    import pyarrow as pa

    from metaindex.parquet.schema import arrow_for_leaf

    try:
        t = arrow_for_leaf(element)
        if not (pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t)):
            return value
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        return pa.array([value], storage).cast(t)[0].as_py()
    except (MetaIndexError, pa.ArrowException, OverflowError, ValueError):
        return value  # out of the logical type's range: show the stored number


def _statistics(meta, element, created_by, order) -> dict | None:
    if meta is None or meta.statistics is None:
        return None
    decoded = stats_mod.decode(meta.statistics, element, created_by, order)
    out = {
        "trusted": decoded.trusted,
        "min": _logical_bound(decoded.min, element),
        "max": _logical_bound(decoded.max, element),
        "null_count": decoded.null_count,
        "nan_count": decoded.nan_count,
        "distinct_count": decoded.distinct_count,
        "is_min_exact": decoded.is_min_exact,
        "is_max_exact": decoded.is_max_exact,
    }
    if not decoded.trusted:
        out["reason"] = decoded.reason
        raw = meta.statistics
        lo = raw.min_value if raw.min_value is not None else raw.min
        hi = raw.max_value if raw.max_value is not None else raw.max
        out["raw_min_hex"] = None if lo is None else bytes(lo)[:_RAW_BOUND].hex()
        out["raw_max_hex"] = None if hi is None else bytes(hi)[:_RAW_BOUND].hex()
    return out


def _page_bounds(ci, i, element, created_by, order):
    if ci.null_pages and ci.null_pages[i]:
        return None, None
    st = fmt.Statistics(min_value=ci.min_values[i], max_value=ci.max_values[i])
    decoded = stats_mod.decode(st, element, created_by, order)
    return (decoded.min, decoded.max) if decoded.trusted else (None, None)


def _page_index(
    pf, chunk, rg: int, path: str, element, created_by, order, readable: bool, pages: bool
) -> dict:
    """Locations of the chunk's column and offset indexes, decoded when readable."""
    out: dict[str, Any] = {}
    for kind in ("column_index", "offset_index"):
        offset = getattr(chunk, f"{kind}_offset")
        length = getattr(chunk, f"{kind}_length")
        out[kind] = None if offset is None else {"offset": offset, "length": length}
    if not readable or (out["column_index"] is None and out["offset_index"] is None):
        if not readable and (out["column_index"] or out["offset_index"]):
            out["sealed"] = "encrypted column: pass --kms to decode"
        return out
    ci = pf.column_index(rg, path) if out["column_index"] else None
    oi = pf.offset_index(rg, path) if out["offset_index"] else None
    if ci is not None:
        n = len(ci.null_pages or [])
        out["column_index"].update(
            pages=n,
            boundary_order=_enum(fmt.BoundaryOrder, ci.boundary_order),
            null_pages=sum(1 for x in ci.null_pages or [] if x),
            null_counts=ci.null_counts is not None,
        )
    if oi is not None:
        locations = oi.page_locations or []
        out["offset_index"].update(
            pages=len(locations), page_bytes=sum(p.compressed_page_size for p in locations)
        )
    if pages:
        listed = []
        count = max(
            len(oi.page_locations or []) if oi else 0, len(ci.null_pages or []) if ci else 0
        )
        for i in range(count):
            page: dict[str, Any] = {"page": i}
            if oi is not None and i < len(oi.page_locations):
                loc = oi.page_locations[i]
                page.update(
                    offset=loc.offset,
                    compressed_size=loc.compressed_page_size,
                    first_row=loc.first_row_index,
                )
            if ci is not None and i < len(ci.null_pages):
                page["null_page"] = bool(ci.null_pages[i])
                page["min"], page["max"] = _page_bounds(ci, i, element, created_by, order)
                if ci.null_counts is not None and i < len(ci.null_counts):
                    page["null_count"] = ci.null_counts[i]
            listed.append(page)
        out["pages"] = listed
    return out


def _bloom(pf, meta, rg: int, path: str, readable: bool) -> dict | None:
    if meta is None or meta.bloom_filter_offset is None:
        return None
    out = {"offset": meta.bloom_filter_offset, "length": meta.bloom_filter_length}
    if not readable:
        out["sealed"] = "encrypted column: pass --kms to decode"
        return out
    bloom = pf.bloom_filter(rg, path)
    ones = int(np.unpackbits(np.ascontiguousarray(bloom.bitset).view(np.uint8)).sum())
    total = bloom.num_bytes * 8
    fill = ones / total if total else 0.0
    out.update(
        num_bytes=bloom.num_bytes,
        blocks=bloom.num_blocks,
        bits_set=round(fill, 4),
        estimated_fpp=round(fill**8, 6),
    )
    return out


def _chunk(
    pf, chunk, rg: int, path: str, element, created_by, order, labels, keyed: bool, pages: bool
) -> dict:
    crypto = chunk.crypto_metadata
    key = None
    if crypto is not None:
        if crypto.which == "ENCRYPTION_WITH_COLUMN_KEY":
            key = (
                _key_info(crypto.ENCRYPTION_WITH_COLUMN_KEY.key_metadata)["label"] or "(column key)"
            )
        else:
            key = labels.get("footer") or "(footer key)"
    meta = chunk.meta_data
    readable = crypto is None
    note = None
    if crypto is not None and keyed:
        try:
            meta = pf.column_chunk_metadata(rg, path)
            readable = True
        except KeyAccessError as exc:
            note = f"key unavailable: {exc}"
    elif crypto is not None:
        note = "encrypted column: statistics, page index and bloom filter need --kms"
    out = {"path": path, "encrypted_with": key}
    if note:
        out["note"] = note
    if meta is None:
        out["metadata"] = None
        return out
    out.update(
        type=_enum(fmt.Type, meta.type),
        encodings=[_enum(fmt.Encoding, e) for e in meta.encodings or []],
        codec=_enum(fmt.CompressionCodec, meta.codec),
        num_values=meta.num_values,
        compressed_bytes=meta.total_compressed_size,
        uncompressed_bytes=meta.total_uncompressed_size,
        data_page_offset=meta.data_page_offset,
        dictionary_page_offset=meta.dictionary_page_offset,
        encoding_stats=[
            {
                "page_type": _enum(fmt.PageType, s.page_type),
                "encoding": _enum(fmt.Encoding, s.encoding),
                "count": s.count,
            }
            for s in meta.encoding_stats or []
        ]
        or None,
        statistics=_statistics(meta, element, created_by, order) if readable else None,
        page_index=_section(
            _page_index, pf, chunk, rg, path, element, created_by, order, readable, pages
        ),
        bloom_filter=_section(_bloom, pf, meta, rg, path, readable),
    )
    return out


def _section(read, *args):
    """A chunk's page index or bloom filter; a damaged one is reported in place (the rest of
    the file still shows) as ``{"error": ...}``."""
    try:
        return read(*args)
    except MetaIndexError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def _encrypted_footer_only(blob) -> dict:
    crypto, _ = fmt.FileCryptoMetaData.decode_prefix(blob)
    footer_key = _key_info(crypto.key_metadata)
    return {
        "footer": {"length": len(blob), "encrypted": True},
        "encryption": {
            "algorithm": _algorithm(crypto.encryption_algorithm),
            "footer_mode": "encrypted",
            "footer_key": footer_key,
            "columns": None,
            "note": "the footer is encrypted: schema, row groups and column keys need --kms",
        },
    }


def inspect_file(path: str, *, kms: str | None = None, pages: bool = False) -> dict:
    """Everything ``metaindex inspect`` shows about the Parquet file at ``path``.

    Args:
        path: a local path or a ``pyarrow.fs`` URI.
        kms: a KMS spec (``metaindex.crypto.kms_spec``) to decrypt an encrypted file with.
        pages: list every page of the page index (default: a summary per chunk).

    Raises:
        FileNotFoundError: no such file.
        DecodeError: not a Parquet file, or a corrupt footer.
        KeyAccessError / IntegrityError: with ``kms``, a key that does not unwrap or a footer
            whose signature or tag does not verify.
    """
    from metaindex.parquet import ParquetFile
    from metaindex.parquet.reader import ENCRYPTED_MAGIC, footer_region

    blob, magic, size = footer_region(path)
    doc = {"file": path, "size": size, "magic": magic.decode("ascii")}
    if magic == ENCRYPTED_MAGIC and kms is None:
        doc.update(_encrypted_footer_only(blob))
        return doc
    dprops = decryption_properties(kms) if kms else None
    with ParquetFile(path, decryption_properties=dprops) as pf:
        md = pf.footer
        doc["footer"] = {
            "length": len(blob),
            "encrypted": magic == ENCRYPTED_MAGIC,
            "version": md.version,
            "created_by": md.created_by,
            "num_rows": md.num_rows,
            "num_row_groups": pf.num_row_groups,
            "column_orders": sorted({o.which or "UNKNOWN" for o in md.column_orders or []}),
            "key_value_metadata": _key_values(pf.key_value_metadata),
        }
        doc["schema"] = _schema(md.schema or [])
        try:
            doc["arrow_schema"] = [f"{f.name}: {f.type}" for f in pf.schema_arrow]
        except MetaIndexError as exc:  # a type we cannot map: the Parquet schema still shows
            doc["arrow_schema"] = None
            doc["arrow_schema_error"] = str(exc)
        labels = {}
        encryption = None
        if md.encryption_algorithm is not None or magic == ENCRYPTED_MAGIC:
            encryption = _encryption(md, blob, magic == ENCRYPTED_MAGIC, dprops is not None)
            labels["footer"] = encryption["footer_key"]["label"]
        leaves = [e for e in (md.schema or [])[1:] if not e.num_children]
        paths = pf.column_paths
        orders = md.column_orders or []
        groups = []
        for rg_index, rg in enumerate(md.row_groups or []):
            chunks = rg.columns or []
            if len(chunks) != len(paths):
                raise DecodeError(
                    f"{path}: row group {rg_index} has {len(chunks)} column "
                    f"chunks, the schema {len(paths)} leaf columns"
                )
            columns = [
                _chunk(
                    pf,
                    chunk,
                    rg_index,
                    paths[i],
                    leaves[i],
                    md.created_by,
                    orders[i] if i < len(orders) else None,
                    labels,
                    dprops is not None,
                    pages,
                )
                for i, chunk in enumerate(chunks)
            ]
            groups.append(
                {
                    "index": rg_index,
                    "num_rows": rg.num_rows,
                    "total_byte_size": rg.total_byte_size,
                    "total_compressed_size": rg.total_compressed_size,
                    "file_offset": rg.file_offset,
                    "sorting_columns": [
                        {
                            "column": paths[s.column_idx]
                            if 0 <= s.column_idx < len(paths)
                            else s.column_idx,
                            "descending": s.descending,
                            "nulls_first": s.nulls_first,
                        }
                        for s in rg.sorting_columns or []
                    ]
                    or None,
                    "columns": columns,
                }
            )
        doc["row_groups"] = groups
        if encryption is not None:
            encryption["columns"] = {
                c["path"]: c["encrypted_with"] for c in (groups[0]["columns"] if groups else [])
            }
        doc["encryption"] = encryption
    return doc


def _key_values(kv: dict) -> list:
    out = []
    for key, value in kv.items():
        value = value or ""
        entry = {"key": key, "bytes": len(value.encode("utf-8", "replace"))}
        if key != "ARROW:schema" and len(value) <= _SHORT_VALUE:
            entry["value"] = value
        out.append(entry)
    return out


def _encryption(md, blob, footer_encrypted: bool, keyed: bool) -> dict:
    if footer_encrypted:
        crypto, _ = fmt.FileCryptoMetaData.decode_prefix(blob)
        algorithm, key_metadata = crypto.encryption_algorithm, crypto.key_metadata
        mode = "encrypted"
    else:
        algorithm, key_metadata = md.encryption_algorithm, md.footer_signing_key_metadata
        mode = "plaintext (signed)"
    out: dict[str, Any] = {
        "algorithm": _algorithm(algorithm),
        "footer_mode": mode,
        "footer_key": _key_info(key_metadata),
    }
    if not footer_encrypted:
        out["signature_verified"] = keyed  # ParquetFile verified it when properties were given
    return out
