"""Human renderings of the CLI's results (rich tables on stdout); ``--json`` bypasses these."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from metaindex.cli.output import human_bytes, jsonable

__all__ = [
    "build_result",
    "compact_result",
    "vacuum_result",
    "describe",
    "history",
    "prune",
    "inspect",
    "advice",
    "read_bar",
    "check",
]

_FAILED_SHOWN = 10


def _cell(value) -> str:
    value = jsonable(value)
    if value is None:
        return "-"
    if isinstance(value, dict) and set(value) == {"base64"}:
        return f"<{len(value['base64']) * 3 // 4} bytes>"
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _table(title: str, *columns) -> Table:
    """A table with a left-aligned bold title above it; ``columns``: names, or (name,
    justify)."""
    table = Table(
        title=f"[bold]{title}[/]",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        title_style="",
        show_edge=False,
        min_width=len(title),
    )
    for column in columns:
        name, justify = column if isinstance(column, tuple) else (column, "left")
        table.add_column(name, justify=justify)
    return table


def _pairs(title: str, rows) -> Table:
    table = Table(
        title=f"[bold]{title}[/]",
        show_header=False,
        title_justify="left",
        box=None,
        padding=(0, 2, 0, 0),
        title_style="",
    )
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, value if isinstance(value, Text) else str(value))
    return table


# ------------------------------------------------------------------------- build / refresh


def build_result(doc: dict):
    def render(console):
        if doc["status"] == "NO_CHANGE":
            console.print(f"[green]up to date[/] {doc['table']} (version {doc['version']})")
        else:
            verb = {"build": "indexed", "upgrade": "upgraded"}.get(doc["operation"], "refreshed")
            removed = (
                f", {doc['entries_removed']} entries removed" if doc["entries_removed"] else ""
            )
            console.print(
                f"[green]{verb}[/] {doc['files_indexed']} files{removed} of {doc['table']} "
                f"-> version {doc['version']} in {doc['seconds']:.2f} s "
                f"(min/max: {doc['footer_minmax']} from footer statistics, "
                f"{doc['scanned_minmax']} from column scans)"
            )
        failed = doc.get("failed") or {}
        if failed:
            console.print(
                f"[yellow]{len(failed)} file(s) could not be indexed[/] (they are always read):"
            )
            for path, reason in list(failed.items())[:_FAILED_SHOWN]:
                console.print(f"  {path}: {reason}", markup=False)
            if len(failed) > _FAILED_SHOWN:
                console.print(f"  ... and {len(failed) - _FAILED_SHOWN} more (see --json)")

    return render


def compact_result(doc: dict):
    def render(console):
        if not doc["compacted"]:
            console.print(f"nothing to compact (version {doc['version']})")
            return
        console.print(
            f"[green]compacted[/] {doc['parts_removed']} part(s) into "
            f"{doc['parts_added']} -> version {doc['version']}"
        )

    return render


def vacuum_result(doc: dict):
    def render(console):
        entries = len(doc["deleted_log_entries"])
        console.print(
            f"[green]vacuumed[/] {len(doc['deleted_parts'])} part file(s) and "
            f"{entries} log entr{'y' if entries == 1 else 'ies'}; oldest readable "
            f"version {doc['oldest_version']}, now version {doc['version']}"
        )

    return render


# ------------------------------------------------------------------------- describe / history


def _damage(console, damage) -> None:
    """The damage line of describe (nothing for a whole store)."""
    if not damage:
        return
    console.print(
        Text(
            f"DAMAGED: {damage['effect']} (run `metaindex refresh`; "
            "`metaindex check` lists everything)",
            style="bold red",
        )
    )
    for problem in damage["problems"]:
        console.print(f"  {problem}", markup=False, highlight=False, style="red", soft_wrap=True)


def describe(doc: dict):
    def render(console):
        _damage(console, doc.get("damage"))
        if doc["version"] is None:
            console.print(
                f"{doc['table']}: the latest version of its index ({doc['store']}) cannot be read",
                markup=False,
            )
            return
        fresh = doc["freshness"]
        if fresh["up_to_date"] is None:
            state = Text(
                f"unknown: {fresh.get('unknown') or 'the file list is encrypted'} "
                "(open the store with its keys)",
                style="yellow",
            )
        elif fresh["up_to_date"]:
            state = Text("up to date", style="green")
        else:
            state = Text(
                f"{fresh['new_files']} new, {fresh['changed_files']} changed, "
                f"{fresh['deleted_files']} deleted file(s) pending: run "
                "`metaindex refresh`",
                style="yellow",
            )
        if fresh.get("unreadable_files"):
            state.append(
                f"; {fresh['unreadable_files']} file(s) unreadable (never skipped, "
                "retried once they change)",
                style="red",
            )
        enc = doc["encryption"]
        if enc:
            enc_text = ", ".join(f"{k}={v}" for k, v in enc.items())
        else:
            enc_text = "none"
        counts = doc["counts"]
        rows = "?" if counts["indexed_rows"] is None else f"{counts['indexed_rows']:,}"
        console.print(
            _pairs(
                "Index",
                [
                    ("table", doc["table"]),
                    ("store", doc["store"]),
                    ("version", f"{doc['version']} ({_cell(doc['timestamp'])})"),
                    (
                        "files",
                        f"{counts['indexed_files']:,} indexed, {rows} rows, "
                        f"{counts['parts']} part(s)",
                    ),
                    ("freshness", state),
                    *(
                        [
                            (
                                "delta",
                                f"version {doc['delta_version']} indexed, "
                                f"{doc.get('delta_versions_behind', '?')} version(s) behind",
                            )
                        ]
                        if "delta_version" in doc
                        else []
                    ),
                    (
                        "partitions",
                        ", ".join(f"{k} ({v})" for k, v in doc["partition_columns"].items())
                        or "none",
                    ),
                    ("encryption", enc_text),
                    (
                        "store size",
                        f"{human_bytes(doc['store_bytes']['live_parts'])} live parts, "
                        f"{human_bytes(doc['store_bytes']['total'])} on disk",
                    ),
                ],
            )
        )
        for path, reason in fresh.get("unreadable", {}).items():
            console.print(f"  unreadable {path}: {reason}", markup=False, highlight=False)
        table = _table("Indexes", "kind", "column", "parameters", "key label")
        for ix in doc["indexes"]:
            params = ", ".join(f"{k}={v}" for k, v in ix["params"].items()) or "-"
            table.add_row(_kind_cell(ix["kind"]), ix["column"], params, ix["key_label"] or "-")
        console.print(table)
        skips = _table(
            "How well each index skips (estimated from the index)",
            "index",
            "files a lookup reads",
            "ranges 0.1% / 1% / 10%",
            "verdict",
        )
        for ix in doc["indexes"]:
            skips.add_row(
                f"{ix['kind']}({ix['column']})",
                read_bar(ix.get("point_read_fraction")),
                _curve(ix.get("range_read_fraction")),
                Text(ix.get("verdict") or "-", style=_verdict_style(ix.get("verdict"))),
            )
        console.print(skips)
        if doc.get("plot"):
            console.print(f"[green]drew[/] the min/max ranges into {doc['plot']}")

    return render


_BAR_WIDTH = 12


def _verdict_style(verdict) -> str:
    word = (verdict or "").split(":")[0]
    return {"effective": "green", "partial": "yellow", "weak": "red", "saturated": "red"}.get(
        word, ""
    )


def read_bar(fraction) -> Text:
    """A compact bar of the fraction of files read: green when few, red when most."""
    if fraction is None:
        return Text("-")
    filled = min(_BAR_WIDTH, max(1 if fraction > 0 else 0, round(fraction * _BAR_WIDTH)))
    bar = Text("█" * filled, style=_fraction_style(fraction))
    bar.append("░" * (_BAR_WIDTH - filled), style="dim")
    bar.append(f" {_percent(fraction):>5}")
    return bar


def _curve(curve) -> str:
    if not curve:
        return "-"
    return " / ".join(_percent(v) for _, v in sorted(curve.items(), key=lambda kv: float(kv[0])))


def _percent(fraction: float) -> str:
    return f"{fraction:.1%}" if fraction < 0.1 else f"{fraction:.0%}"


def advice(doc: dict):
    def render(console):
        current = doc["current"]
        if not doc["options"]:
            for note in doc["notes"]:
                console.print(note)
            return
        console.print(
            f"[bold]Layout advice[/] for {doc['table']}: sampled "
            f"{doc['sample_rows']:,} rows of {doc['sample_files']} of "
            f"{doc['files']:,} files, simulated into {doc['simulated_files']} files"
        )
        table = _table(
            "Files an equality lookup reads, now and after each layout",
            "layout",
            *[(f"minmax({c})", "left") for c in current],
            ("mean", "right"),
        )
        for option in doc["options"]:
            cells = []
            for c in current:
                f = option["read_fraction"][c]
                now = "-" if f["now"] is None else _percent(f["now"])
                cells.append(
                    Text(f"{now} -> {_percent(f['after'])}", style=_fraction_style(f["after"]))
                )
            table.add_row(
                option["layout"],
                *cells,
                f"{_percent(option['mean_before'])} -> {_percent(option['mean_after'])}",
            )
        console.print(table)
        for c, option in doc["per_column"].items():
            f = option["read_fraction"][c]
            if f["now"] is not None and f["after"] < f["now"] - 0.05:
                console.print(
                    f"minmax({c}): {_percent(f['now'])} -> {_percent(f['after'])} "
                    f"of the files with [bold]{option['layout']}[/]"
                )
        best = doc["recommendation"]
        if best is None:
            console.print(
                "[green]no change needed[/]: the current layout is about as "
                "selective as the layouts simulated"
            )
        else:
            console.print(
                f"[bold]Recommended:[/] {best['layout']} (mean "
                f"{_percent(best['mean_before'])} -> "
                f"{_percent(best['mean_after'])} of the files per lookup)"
            )
            for c, f in best["read_fraction"].items():
                if f["now"] is not None and f["after"] > f["now"] + 0.05:
                    console.print(
                        f"[yellow]trade-off[/]: minmax({c}) "
                        f"{_percent(f['now'])} -> {_percent(f['after'])}"
                    )
            console.print("In Spark:")
            console.print(best["spark"], markup=False, highlight=False)
        for note in doc["notes"]:
            console.print(f"[dim]note: {note}[/]")

    return render


def _fraction_style(fraction: float) -> str:
    return "green" if fraction <= 0.1 else "yellow" if fraction < 0.5 else "red"


def check(doc: dict):
    def render(console):
        if doc["healthy"]:
            console.print(
                f"[green]healthy[/]: version {doc['version']} (log from version "
                f"{doc['oldest_version']}), {doc['parts']} part(s), "
                f"{_cell(doc['objects'])} file(s), {doc['verified_parts']} part(s) "
                "decoded and compared with the log"
            )
        else:
            console.print(
                Text(
                    f"DAMAGED: {len(doc['problems'])} problem(s); `metaindex "
                    "refresh` repairs the store",
                    style="bold red",
                )
            )
            for problem in doc["problems"]:
                console.print(
                    f"  {problem['kind']}: {problem['message']}",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
        for note in doc["notes"]:
            console.print(f"  note: {note}", markup=False, highlight=False, soft_wrap=True)

    return render


def history(doc: dict):
    def render(console):
        table = _table(
            f"History of {doc['table']}",
            ("version", "right"),
            "time (UTC)",
            "operation",
            ("+files", "right"),
            ("-files", "right"),
            ("superseded", "right"),
            ("+parts", "right"),
            ("-parts", "right"),
        )
        for e in doc["history"]:
            table.add_row(
                str(e["version"]),
                _cell(e["timestamp"])[:19].replace("T", " "),
                e["operation"],
                str(e["files_added"]),
                str(e["files_removed"]),
                str(e["files_superseded"]),
                str(e["parts_added"]),
                str(e["parts_removed"]),
            )
        console.print(table)

    return render


# ------------------------------------------------------------------------- prune


def prune(doc: dict):
    def render(console):
        total = doc["total_files"]
        ratio = doc["skipped_files"] / total if total else 0.0
        console.print(
            f"[bold]{doc['kept_files']:,}[/] of {total:,} files kept, "
            f"[green]{doc['skipped_files']:,} skipped ({ratio:.0%})[/]; "
            f"{human_bytes(doc['kept_bytes'])} of {human_bytes(doc['total_bytes'])} to read "
            f"(version {doc['version']}, {doc['seconds'] * 1000:.1f} ms)"
        )
        if doc.get("damage"):
            console.print(
                Text(
                    f"every file read: {doc['damage']} (run `metaindex refresh`)", style="bold red"
                )
            )
        elif doc["unindexed_files"]:
            console.print(
                f"[yellow]{doc['unindexed_files']} file(s) are not indexed[/] (new "
                "or changed since the last refresh): always kept"
            )
        for c in doc.get("conjuncts", ()):
            if not c["used"]:
                from rich.markup import escape

                console.print(
                    f"[yellow]not used[/] ({c['reason']}): {escape(c['text'])}", highlight=False
                )
        if doc["skipped_by_index"]:
            table = _table("Files each index alone rules out", "index", ("files", "right"))
            for name, count in doc["skipped_by_index"].items():
                table.add_row(name, f"{count:,}")
            console.print(table)
        for key in ("kept", "skipped"):
            if key in doc:
                console.print(f"[bold]{key}[/] ({len(doc[key])}):")
                for path in doc[key]:
                    console.print(f"  {path}", markup=False, highlight=False)

    return render


# ------------------------------------------------------------------------- inspect


def _stats_cells(stats) -> tuple[str, str, str]:
    if stats is None:
        return "-", "-", "-"
    nulls = "-" if stats["null_count"] is None else str(stats["null_count"])
    if not stats["trusted"]:
        return "(untrusted)", "(untrusted)", nulls
    return _cell(stats["min"]), _cell(stats["max"]), nulls


def _page_index_cell(pi) -> str:
    if pi is None:
        return "-"
    if pi.get("error"):
        return "damaged (see --json)"
    if pi.get("sealed"):
        return "sealed"
    ci, oi = pi.get("column_index"), pi.get("offset_index")
    if ci is None and oi is None:
        return "-"
    parts = []
    if oi is not None and "pages" in oi:
        parts.append(f"{oi['pages']} page(s)")
    if ci is not None and "boundary_order" in ci:
        parts.append(ci["boundary_order"].lower())
    return ", ".join(parts) or "yes"


def _kind_cell(kind: str) -> str:
    """A kind's stored name, with the kind's own label for people when it has one."""
    from metaindex.index import KINDS

    cls = KINDS.get(kind)
    label = cls.display_name() if cls is not None else kind
    return kind if label == kind else f"{kind} ({label})"


def _bloom_cell(bloom) -> str:
    if bloom is None:
        return "-"
    if bloom.get("error"):
        return "damaged (see --json)"
    if bloom.get("sealed"):
        return "sealed"
    return f"{human_bytes(bloom['num_bytes'])}, fpp ~{bloom['estimated_fpp']:.2g}"


def inspect(doc: dict):
    def render(console):
        footer = doc["footer"]
        rows = [
            ("file", doc["file"]),
            ("size", f"{doc['size']:,} bytes"),
            ("magic", doc["magic"]),
            (
                "footer",
                f"{footer['length']:,} bytes{', encrypted' if footer.get('encrypted') else ''}",
            ),
        ]
        if "version" in footer:
            rows += [
                ("version", footer["version"]),
                ("created by", footer["created_by"] or "-"),
                ("rows", f"{footer['num_rows']:,}"),
                ("row groups", footer["num_row_groups"]),
                ("column orders", ", ".join(footer["column_orders"]) or "-"),
            ]
        console.print(_pairs("Parquet file", rows))
        enc = doc.get("encryption")
        if enc:
            _render_encryption(console, enc)
        if "schema" not in doc:
            return
        if footer["key_value_metadata"]:
            kv = _table("Key/value metadata", "key", ("bytes", "right"), "value")
            for entry in footer["key_value_metadata"]:
                kv.add_row(entry["key"], str(entry["bytes"]), entry.get("value", "..."))
            console.print(kv)
        schema = _table("Schema", "column", "physical", "logical", "converted", "repetition")
        for e in doc["schema"][1:]:
            name = "  " * (e["depth"] - 1) + e["name"]
            schema.add_row(
                name,
                e.get("physical_type") or f"group({e.get('children', 0)})",
                e["logical_type"] or "-",
                e["converted_type"] or "-",
                e["repetition"] or "-",
            )
        console.print(schema)
        for rg in doc["row_groups"]:
            _render_row_group(console, rg, bool(enc))

    return render


def _render_row_group(console, rg: dict, encrypted: bool) -> None:
    """Two tables per row group: the chunks' layout, then their statistics and indexes."""
    title = (
        f"Row group {rg['index']}: {rg['num_rows']:,} rows, {human_bytes(rg['total_byte_size'])}"
    )
    layout = _table(
        title,
        "column",
        "type",
        "encodings",
        "codec",
        ("size", "right"),
        ("raw size", "right"),
        *(["key"] if encrypted else []),
    )
    for column in layout.columns:
        if column.header == "encodings":  # the one column that wraps, a name per line
            column.min_width = len("RLE_DICTIONARY")
        else:
            column.no_wrap = True
    stats = _table(
        f"Row group {rg['index']}: statistics and indexes",
        "column",
        "min",
        "max",
        ("nulls", "right"),
        "page index",
        "bloom filter",
    )
    for c in rg["columns"]:
        key = [c["encrypted_with"] or "-"] if encrypted else []
        if c.get("type") is None:  # an encrypted column whose metadata we cannot read
            layout.add_row(c["path"], "?", "-", "-", "-", "-", *key)
            stats.add_row(c["path"], "-", "-", "-", "-", "-")
            continue
        codec = "none" if c["codec"] == "UNCOMPRESSED" else str(c["codec"]).lower()
        layout.add_row(
            c["path"],
            c["type"],
            " ".join(c["encodings"]),
            codec,
            human_bytes(c["compressed_bytes"]),
            human_bytes(c["uncompressed_bytes"]),
            *key,
        )
        lo, hi, nulls = _stats_cells(c["statistics"])
        stats.add_row(
            c["path"],
            lo,
            hi,
            nulls,
            _page_index_cell(c["page_index"]),
            _bloom_cell(c["bloom_filter"]),
        )
    console.print(layout)
    console.print(stats)
    for c in rg["columns"]:
        for page in (c.get("page_index") or {}).get("pages", []):
            console.print(
                f"  {c['path']} page {page['page']}: "
                + ", ".join(f"{k}={_cell(v)}" for k, v in page.items() if k != "page"),
                markup=False,
            )


def _render_encryption(console, enc: dict) -> None:
    algorithm = enc["algorithm"]
    footer_key = enc["footer_key"]
    rows = [
        ("algorithm", algorithm["name"]),
        ("footer", enc["footer_mode"]),
        ("footer key", footer_key.get("label") or footer_key.get("key_metadata") or "-"),
    ]
    if algorithm.get("aad_prefix_supplied_by_reader"):
        rows.append(("AAD prefix", "supplied by the reader"))
    elif algorithm.get("aad_prefix_stored"):
        rows.append(("AAD prefix", "stored in the file"))
    if "signature_verified" in enc:
        rows.append(
            ("signature", "verified" if enc["signature_verified"] else "not verified (needs --kms)")
        )
    if enc.get("note"):
        rows.append(("note", Text(enc["note"], style="yellow")))
    console.print(_pairs("Encryption", rows))
    columns = enc.get("columns")
    if columns:
        by_key: dict = {}
        for path, label in columns.items():
            by_key.setdefault(label or "plaintext", []).append(path)
        table = _table("Column keys", "key label", "columns")
        for label, paths in by_key.items():
            table.add_row(label, ", ".join(paths))
        console.print(table)
