"""Dremel shredding and assembly: Arrow arrays <-> Parquet definition / repetition levels.

The schema side is a :class:`LevelNode` tree that mirrors the Parquet schema of one top-level
column: every node has a name, a repetition (REQUIRED / OPTIONAL / REPEATED, as in
``parquet.thrift``) and a kind:

``"leaf"``
    a primitive column; ``arrow_type`` is the Arrow type of its values.
``"group"``
    an unannotated group: an Arrow struct of its children.
``"list"``
    a LIST-annotated group. Its single child must be REPEATED. The element follows the
    spec's backward-compatibility rules: the repeated child is itself the (required) element
    when it is a leaf, a group of several fields, a group whose one field is repeated, or is
    named ``array`` / ``<list name>_tuple`` (legacy 2-level lists); otherwise its one field
    is the element (the standard 3-level ``repeated group list { element }``).
``"map"``
    a MAP (or stray MAP_KEY_VALUE) group: one REPEATED child group holding a REQUIRED key and
    optionally a value. A key-only map becomes a list of its keys.

A REPEATED node that is not the repeated child of a LIST / MAP (an unannotated ``repeated
int32 x`` or ``repeated group g {...}``) is a required list of required elements, the element
being the node itself. ``arrow_type`` on list / map nodes is optional and only picks the Arrow
flavour and names to rebuild (``large_list``, ``fixed_size_list``, the element field name,
``keys_sorted``); by default a list becomes ``list<element name: ...>`` and a map
``map<key, value>``.

The write side builds the tree from an Arrow field (:func:`level_tree`: nullable -> OPTIONAL,
lists as 3-level ``list`` / ``element``, maps as ``key_value`` / ``key`` / ``value``, as pyarrow
writes them) and :func:`shred` returns one :class:`LeafColumn` per leaf. The read side calls
:func:`assemble` with the tree the Parquet layer built from the file's schema. The per-value
work happens in the ``metaindex._native.levels`` (write) and
``metaindex._native.levels_assemble`` (read) kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

from metaindex._native import levels as _k
from metaindex._native import levels_assemble as _a
from metaindex.errors import DecodeError, EncodeError, SchemaError

__all__ = [
    "REQUIRED",
    "OPTIONAL",
    "REPEATED",
    "LevelNode",
    "LeafSpec",
    "LeafColumn",
    "level_tree",
    "leaf_specs",
    "shred",
    "assemble",
]

REQUIRED, OPTIONAL, REPEATED = 0, 1, 2
_KINDS = ("leaf", "group", "list", "map")
# Kernel outputs come from Arrow's pool: it recycles pages, where fresh numpy allocations of
# this size pay a page fault per 4 KiB (as much time as the kernels themselves).
_ALLOC = pa.allocate_buffer
_MAX_DEPTH = 1000


@dataclass(frozen=True)
class LevelNode:
    """One node of a Parquet schema subtree, as the level kernels need it.

    Attributes:
        name: the Parquet field name.
        repetition: REQUIRED (0), OPTIONAL (1) or REPEATED (2).
        kind: "leaf", "group", "list" or "map" (see the module docstring).
        children: child nodes (none for a leaf).
        arrow_type: leaf: the Arrow type of the values; list / map: optional Arrow type whose
            flavour and field names the assembled array takes; ignored on groups.
    """

    name: str
    repetition: int
    kind: str = "leaf"
    children: tuple[LevelNode, ...] = ()
    arrow_type: pa.DataType | None = None

    def __post_init__(self) -> None:
        if self.repetition not in (REQUIRED, OPTIONAL, REPEATED):
            raise SchemaError(f"{self.name}: repetition must be 0, 1 or 2, not {self.repetition!r}")
        if self.kind not in _KINDS:
            raise SchemaError(f"{self.name}: kind must be one of {_KINDS}, not {self.kind!r}")
        if not isinstance(self.children, tuple):
            object.__setattr__(self, "children", tuple(self.children))
        if (self.kind == "leaf") != (not self.children):
            raise SchemaError(f"{self.name}: a leaf has no children and a group at least one")

    def to_arrow_field(self) -> pa.Field:
        """The Arrow field this subtree assembles to (leaves need ``arrow_type``)."""
        return _compile(self)[0].field()


@dataclass(frozen=True)
class LeafSpec:
    """A leaf column of a LevelNode tree: its Parquet path and maximum levels."""

    path: tuple[str, ...]
    max_def: int
    max_rep: int
    node: LevelNode


@dataclass(frozen=True)
class LeafColumn:
    """One shredded leaf column.

    Attributes:
        path: the Parquet column path, e.g. ``("col", "list", "element")``.
        max_def: maximum definition level.
        max_rep: maximum repetition level.
        def_levels: numpy int16, one per level position (all ``max_def`` == 0 when required).
        rep_levels: numpy int16 of the same length, or None when ``max_rep`` is 0.
        values: the leaf's present (non-null) values in order, an Arrow array.
        node: the leaf's LevelNode (its ``arrow_type`` is the values' type).
    """

    path: tuple[str, ...]
    max_def: int
    max_rep: int
    def_levels: np.ndarray
    rep_levels: np.ndarray | None
    values: pa.Array
    node: LevelNode


# ------------------------------------------------------------------------- schema from Arrow


def level_tree(field: pa.Field) -> LevelNode:
    """The Parquet layout pyarrow writes for an Arrow field, as a LevelNode tree.

    Raises:
        SchemaError: a type Parquet cannot hold (union, list_view, empty struct, ...).
    """
    if not isinstance(field, pa.Field):
        raise TypeError(f"level_tree expects a pyarrow.Field, not {type(field).__name__}")
    return _tree(field.name, field.type, field.nullable, 0)


def _tree(name: str, t: pa.DataType, nullable: bool, depth: int) -> LevelNode:
    if depth > _MAX_DEPTH:
        raise SchemaError(f"{name}: nesting deeper than {_MAX_DEPTH}")
    rep = OPTIONAL if nullable else REQUIRED
    if pa.types.is_struct(t):
        if t.num_fields == 0:
            raise SchemaError(f"{name}: Parquet cannot hold a struct without fields")
        kids = tuple(_tree(f.name, f.type, f.nullable, depth + 1) for f in t)
        return LevelNode(name, rep, "group", kids)
    if pa.types.is_map(t):
        kv = LevelNode(
            "key_value",
            REPEATED,
            "group",
            (
                _tree("key", t.key_type, False, depth + 2),
                _tree("value", t.item_type, t.item_field.nullable, depth + 2),
            ),
        )
        return LevelNode(name, rep, "map", (kv,), t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        vf = t.value_field
        element = _tree("element", vf.type, vf.nullable, depth + 2)
        return LevelNode(name, rep, "list", (LevelNode("list", REPEATED, "group", (element,)),), t)
    if (
        pa.types.is_union(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
        or pa.types.is_run_end_encoded(t)
    ):
        raise SchemaError(f"{name}: Arrow type {t} has no Parquet layout")
    return LevelNode(name, rep, "leaf", (), t)


# ------------------------------------------------------------------------ compiled plan


class _Plan:
    """One Arrow node and the levels it owns (the tree both kernels walk)."""

    __slots__ = (
        "kind",
        "name",
        "nullable",
        "def_present",
        "slot_def",
        "slot_rep",
        "children",
        "flavor",
        "list_size",
        "override",
        "leaf_index",
        "first_leaf",
        "path",
        "rep_defs",
        "node",
    )

    def __init__(
        self, kind, name, nullable, def_present, slot_def, slot_rep, children=(), node=None, path=()
    ):
        self.kind = kind  # "leaf" | "struct" | "list" | "map"
        self.name = name  # Arrow field name
        self.nullable = nullable  # the Parquet level is OPTIONAL
        self.def_present = def_present  # def level when this node is non-null
        self.slot_def = slot_def  # def / rep of the nearest enclosing repeated level
        self.slot_rep = slot_rep
        self.children = list(children)
        self.flavor = "list"  # list: "list" | "large" | "fixed"
        self.list_size = 0
        self.override = None  # list / map: Arrow type giving names and flavour
        self.leaf_index = -1
        self.first_leaf = children[0].first_leaf if children else -1
        self.path = path  # leaf: Parquet column path
        self.rep_defs = ()  # leaf: def level of each enclosing repeated level
        self.node = node

    def arrow_type(self, child_types=None) -> pa.DataType:
        if child_types is None:
            child_types = [c.arrow_type() for c in self.children]
        if self.kind == "leaf":
            if self.node.arrow_type is None:
                raise SchemaError(f"{'.'.join(self.path)}: leaf without arrow_type")
            return self.node.arrow_type
        fields = [
            pa.field(c.name, t, c.nullable) for c, t in zip(self.children, child_types, strict=True)
        ]
        if self.kind == "struct":
            return pa.struct(fields)
        if self.kind == "map":
            kf, vf = child_types[0].field(0), child_types[0].field(1)
            ov = self.override
            key = pa.field(ov.key_field.name if ov else kf.name, kf.type, False)
            item = pa.field(ov.item_field.name if ov else vf.name, vf.type, vf.nullable)
            return pa.map_(key, item, keys_sorted=bool(ov and ov.keys_sorted))
        elem = fields[0]
        if self.override is not None:
            elem = pa.field(self.override.value_field.name, elem.type, elem.nullable)
        if self.flavor == "large":
            return pa.large_list(elem)
        if self.flavor == "fixed":
            return pa.list_(elem, self.list_size)
        return pa.list_(elem)

    def field(self) -> pa.Field:
        return pa.field(self.name, self.arrow_type(), self.nullable)


@lru_cache(maxsize=256)
def _compile(node: LevelNode) -> tuple[_Plan, tuple[_Plan, ...]]:
    leaves: list[_Plan] = []
    plan = _build(node, (), 0, 0, 0, 0, (), False, leaves, 0)
    return plan, tuple(leaves)


def _is_element_repeated_node(lst: LevelNode, rep: LevelNode) -> bool:
    """Backward-compatibility rules 1-4: the repeated child itself is the element."""
    if rep.kind == "leaf" or len(rep.children) != 1:
        return True
    if rep.children[0].repetition == REPEATED:
        return True
    if rep.kind != "group":
        return True
    return rep.name == "array" or rep.name == lst.name + "_tuple"


def _build(node, parent_path, d, r, slot_def, slot_rep, rep_defs, as_required, leaves, depth):
    if depth > _MAX_DEPTH:
        raise SchemaError(f"{node.name}: nesting deeper than {_MAX_DEPTH}")
    path = parent_path + (node.name,)
    repetition = REQUIRED if as_required else node.repetition
    if repetition == REPEATED:
        # unannotated repeated field: a required list whose element is the field itself
        elem = _build(
            node,
            parent_path,
            d + 1,
            r + 1,
            d + 1,
            r + 1,
            rep_defs + (d + 1,),
            True,
            leaves,
            depth + 1,
        )
        return _Plan("list", node.name, False, d, slot_def, slot_rep, [elem], node)
    nullable = repetition == OPTIONAL
    p = d + nullable
    if node.kind == "leaf":
        plan = _Plan("leaf", node.name, nullable, p, slot_def, slot_rep, (), node, path)
        plan.leaf_index = plan.first_leaf = len(leaves)
        plan.rep_defs = rep_defs
        leaves.append(plan)
        return plan
    if node.kind == "group":
        kids = [
            _build(c, path, p, r, slot_def, slot_rep, rep_defs, False, leaves, depth + 1)
            for c in node.children
        ]
        return _Plan("struct", node.name, nullable, p, slot_def, slot_rep, kids, node)
    if len(node.children) != 1 or node.children[0].repetition != REPEATED:
        raise SchemaError(
            f"{'.'.join(path)}: a {node.kind.upper()} group must hold exactly one repeated field"
        )
    rep = node.children[0]
    inner = (p + 1, r + 1, p + 1, r + 1, rep_defs + (p + 1,))
    if node.kind == "list":
        if _is_element_repeated_node(node, rep):
            elem = _build(rep, path, *inner, True, leaves, depth + 1)
        else:
            elem = _build(rep.children[0], path + (rep.name,), *inner, False, leaves, depth + 2)
        plan = _Plan("list", node.name, nullable, p, slot_def, slot_rep, [elem], node)
        ov = node.arrow_type
        if ov is not None:
            if pa.types.is_large_list(ov):
                plan.flavor = "large"
            elif pa.types.is_fixed_size_list(ov):
                plan.flavor, plan.list_size = "fixed", ov.list_size
            elif not pa.types.is_list(ov):
                raise SchemaError(f"{'.'.join(path)}: LIST node with Arrow type {ov}")
            plan.override = ov
        return plan
    # map
    if rep.kind != "group" or not 1 <= len(rep.children) <= 2:
        raise SchemaError(f"{'.'.join(path)}: MAP key_value must be a group of key [, value]")
    key = rep.children[0]
    if key.repetition != REQUIRED:
        raise SchemaError(f"{'.'.join(path)}: MAP key must be required")
    kv_path = path + (rep.name,)
    kids = [
        _build(
            c, kv_path, p + 1, r + 1, p + 1, r + 1, rep_defs + (p + 1,), False, leaves, depth + 2
        )
        for c in rep.children
    ]
    if len(kids) == 1:  # a set of keys
        return _Plan("list", node.name, nullable, p, slot_def, slot_rep, kids, node)
    entries = _Plan("struct", rep.name, False, p + 1, p + 1, r + 1, kids, rep)
    plan = _Plan("map", node.name, nullable, p, slot_def, slot_rep, [entries], node)
    if node.arrow_type is not None:
        if not pa.types.is_map(node.arrow_type):
            raise SchemaError(f"{'.'.join(path)}: MAP node with Arrow type {node.arrow_type}")
        plan.override = node.arrow_type
    return plan


def leaf_specs(node: LevelNode) -> list[LeafSpec]:
    """The leaf columns of a tree in Parquet column order, with their maximum levels."""
    return [
        LeafSpec(lp.path, lp.def_present, len(lp.rep_defs), lp.node) for lp in _compile(node)[1]
    ]


# ------------------------------------------------------------------------------- shredding


def shred(array: pa.Array, field: pa.Field | LevelNode) -> list[LeafColumn]:
    """Shred an Arrow array into one LeafColumn per Parquet leaf column.

    Args:
        array: the column's values (any offset; nested struct / list / large_list /
            fixed_size_list / map types at any depth).
        field: the Arrow field (its nullability gives OPTIONAL / REQUIRED, see
            :func:`level_tree`) or a LevelNode tree of the same shape.

    Returns:
        The leaf columns in Parquet column order.

    Raises:
        EncodeError: nulls in a non-nullable level, or an array that does not fit the schema.
        SchemaError: a type Parquet cannot hold.
    """
    if isinstance(array, pa.ChunkedArray):
        raise TypeError("shred expects a pyarrow.Array; shred each chunk of a ChunkedArray")
    if not isinstance(array, pa.Array):
        raise TypeError(f"shred expects a pyarrow.Array, not {type(array).__name__}")
    node = level_tree(field) if isinstance(field, pa.Field) else field
    if not isinstance(node, LevelNode):
        raise TypeError("field must be a pyarrow.Field or a LevelNode")
    plan, leaf_plans = _compile(node)
    out: list[LeafColumn | None] = [None] * len(leaf_plans)
    _walk(plan, array, [], out)
    return out  # type: ignore[return-value]


def _validity(arr: pa.Array):
    if arr.null_count == 0:
        return None
    if arr.type.id == pa.null().id:
        return np.zeros((arr.offset + len(arr) + 7) // 8, dtype=np.uint8)
    return arr.buffers()[0]


def _walk(plan: _Plan, arr: pa.Array, steps: list, out: list) -> None:
    kind = plan.kind
    valid = _validity(arr)
    base = (valid, arr.offset, len(arr), plan.nullable, plan.def_present)
    if isinstance(arr, pa.ExtensionArray) and kind != "leaf":
        arr = arr.storage
    t = arr.type
    if kind == "leaf":
        if pa.types.is_nested(t):
            raise EncodeError(f"{plan.name}: expected a leaf value, got Arrow type {t}")
        steps.append((0, *base, None, 0, 0, len(arr)))
        out[plan.leaf_index] = _shred_leaf(plan, arr, steps)
        steps.pop()
        return
    if kind == "struct":
        if not pa.types.is_struct(t) or t.num_fields != len(plan.children):
            raise EncodeError(
                f"{plan.name}: expected a struct of {len(plan.children)} fields, got Arrow type {t}"
            )
        steps.append((0, *base, None, 0, 0, len(arr)))
        for i, child in enumerate(plan.children):
            _walk(child, arr.field(i), steps, out)
        steps.pop()
        return
    if kind == "map" and not pa.types.is_map(t):
        raise EncodeError(f"{plan.name}: expected a map, got Arrow type {t}")
    if pa.types.is_list(t) or pa.types.is_map(t):
        step_kind, offsets, size = 1, arr.buffers()[1], 0
    elif pa.types.is_large_list(t):
        step_kind, offsets, size = 2, arr.buffers()[1], 0
    elif pa.types.is_fixed_size_list(t):
        step_kind, offsets, size = 3, None, t.list_size
    else:
        raise EncodeError(f"{plan.name}: expected a list, got Arrow type {t}")
    values = arr.values
    rep_child = plan.children[0].slot_rep
    steps.append((step_kind, *base, offsets, rep_child, size, len(values)))
    _walk(plan.children[0], values, steps, out)
    steps.pop()


def _shred_leaf(plan: _Plan, arr: pa.Array, steps: list) -> LeafColumn:
    t = arr.type
    buf, width = None, 0
    if pa.types.is_boolean(t):
        buf = arr.buffers()[1]
    elif not (
        pa.types.is_dictionary(t) or isinstance(t, pa.BaseExtensionType) or pa.types.is_null(t)
    ):
        try:
            bits = t.bit_width
        except ValueError:
            bits = 0
        if bits and bits % 8 == 0:
            buf, width = arr.buffers()[1], bits // 8
    max_rep = len(plan.rep_defs)
    try:
        defs, reps, mode, payload, lo, hi, n = _k.shred_leaf(steps, max_rep > 0, buf, width, _ALLOC)
    except EncodeError as e:
        raise EncodeError(f"column {'.'.join(plan.path)}: {e}") from None
    if mode == 0:
        values = arr.slice(lo, hi - lo)
    elif mode == 3:
        values = _compact_binary(arr.slice(lo, hi - lo), payload, n)
        if values is None:
            mask = pa.Array.from_buffers(pa.bool_(), hi - lo, [None, pa.py_buffer(payload)])
            values = arr.slice(lo, hi - lo).filter(mask)
    else:
        values = pa.Array.from_buffers(t, n, [None, pa.py_buffer(payload)])
    return LeafColumn(plan.path, plan.def_present, max_rep, defs, reps, values, plan.node)


def _compact_binary(arr: pa.Array, keep, n: int) -> pa.Array | None:
    """The kept values of a binary / string array as a view of its data buffer: only the
    offsets are gathered (Arrow's filter copies every byte). None when that does not apply:
    other types, or a dropped slot that holds bytes."""
    t = arr.type
    if pa.types.is_binary(t) or pa.types.is_string(t):
        dtype = np.int32
    elif pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        dtype = np.int64
    else:
        return None
    m = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype, m + 1, arr.offset * np.dtype(dtype).itemsize)
    mask = np.unpackbits(np.frombuffer(keep, np.uint8), count=m, bitorder="little").view(np.bool_)
    starts = offsets[:-1]
    dropped = ~mask
    if np.any(offsets[1:][dropped] != starts[dropped]):
        return None  # a dropped (null) slot with bytes: let Arrow filter it
    out = np.empty(n + 1, dtype)
    out[:n] = starts[mask]
    out[n] = offsets[m]
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(out), arr.buffers()[2]])


# -------------------------------------------------------------------------------- assembly


class _Col:
    __slots__ = ("defs", "reps", "values", "n_records", "n_slots")

    def __init__(self, defs, reps, values, n_records, n_slots):
        self.defs, self.reps, self.values = defs, reps, values
        self.n_records, self.n_slots = n_records, n_slots


def assemble(node: LevelNode, leaves: Sequence[Any]) -> pa.Array:
    """Rebuild an Arrow array from its leaf columns' levels and decoded non-null values.

    Args:
        node: the column's LevelNode tree (from the Parquet schema, or :func:`level_tree`).
        leaves: one entry per leaf in Parquet column order: a :class:`LeafColumn`, or a tuple
            ``(def_levels, rep_levels, values)``. Levels are int16-compatible arrays (def may
            be None for a column with max_def 0, rep None for max_rep 0); values is an Arrow
            array (or 1-D numpy array) of the present values only.

    Returns:
        The assembled array (one entry per record).

    Raises:
        DecodeError: levels out of range or inconsistent, values that do not match the levels,
            leaves that disagree on the shape they share.
        SchemaError: a tree the assembler cannot map to Arrow.
    """
    plan, leaf_plans = _compile(node)
    if len(leaves) != len(leaf_plans):
        raise SchemaError(
            f"{node.name}: {len(leaf_plans)} leaf columns expected, got {len(leaves)}"
        )
    cols = [_check_leaf(lp, leaf) for lp, leaf in zip(leaf_plans, leaves, strict=True)]
    for lp, col in zip(leaf_plans[1:], cols[1:], strict=True):
        if col.n_records != cols[0].n_records:
            raise DecodeError(
                f"column {'.'.join(lp.path)} holds {col.n_records} records, "
                f"column {'.'.join(leaf_plans[0].path)} {cols[0].n_records}"
            )
    return _assemble(plan, cols)


def _levels(x, what: str):
    if x is None:
        return None
    if isinstance(x, (pa.Array, pa.ChunkedArray)):
        x = x.to_numpy(zero_copy_only=False)
    a = np.asarray(x)
    if a.ndim != 1:
        raise DecodeError(f"{what} levels must be one-dimensional")
    if a.dtype != np.int16:
        if a.size and (a.dtype.kind not in "iu" or a.min() < 0 or a.max() > 32767):
            raise DecodeError(f"{what} levels out of the int16 range or not integers")
        a = a.astype(np.int16)
    return np.ascontiguousarray(a)


def _check_leaf(lp: _Plan, leaf) -> _Col:
    if isinstance(leaf, LeafColumn):
        defs, reps, values = leaf.def_levels, leaf.rep_levels, leaf.values
    else:
        defs, reps, values = leaf
    where = ".".join(lp.path)
    if isinstance(values, np.ndarray):
        values = pa.array(values)
    if not isinstance(values, pa.Array):
        raise TypeError(f"column {where}: values must be a pyarrow.Array or numpy array")
    if values.null_count:
        raise DecodeError(f"column {where}: decoded values must not hold nulls")
    max_def, max_rep = lp.def_present, len(lp.rep_defs)
    defs, reps = _levels(defs, "definition"), _levels(reps, "repetition")
    if defs is None:
        if max_def or reps is not None:
            raise DecodeError(f"column {where}: definition levels missing (max_def {max_def})")
        return _Col(None, None, values, len(values), len(values))
    rep_def = np.array((0,) + lp.rep_defs, dtype=np.int16)
    try:
        records, present, slots = _a.check_levels(
            defs, reps, max_def, max_rep, rep_def, lp.slot_def
        )
    except DecodeError as e:
        raise DecodeError(f"column {where}: {e.args[0]}", offset=e.offset) from None
    if present != len(values):
        raise DecodeError(
            f"column {where}: levels hold {present} values, page decoded {len(values)}"
        )
    return _Col(defs, reps if max_rep else None, values, records, slots)


def _assemble(plan: _Plan, cols: list[_Col]) -> pa.Array:
    if plan.kind == "leaf":
        return _leaf_array(plan, cols[plan.leaf_index])
    children = [_assemble(c, cols) for c in plan.children]
    col = cols[plan.first_leaf]
    typ = plan.arrow_type([c.type for c in children])
    if plan.kind == "struct":
        if not plan.nullable and plan.def_present == plan.slot_def:
            length, valid = len(children[0]), None  # every slot is present
        else:
            length, valid, _, _, _ = _a.node_levels(
                col.defs, col.reps, plan.slot_def, plan.slot_rep, plan.def_present, 0, _ALLOC
            )
        for c, arr in zip(plan.children, children, strict=True):
            if len(arr) != length:
                raise DecodeError(
                    f"struct {plan.name}: field {c.name} has {len(arr)} slots, not {length}"
                )
        return pa.Array.from_buffers(typ, length, [_buf(valid)], children=children)
    width = 8 if plan.flavor == "large" else 4
    length, valid, nulls, offsets, n_child = _a.node_levels(
        col.defs, col.reps, plan.slot_def, plan.slot_rep, plan.def_present, width, _ALLOC
    )
    child = children[0]
    if plan.kind == "map":
        child = pa.StructArray.from_arrays(
            [child.field(0), child.field(1)], fields=[typ.key_field, typ.item_field]
        )
    if len(child) != n_child:
        raise DecodeError(
            f"list {plan.name}: {n_child} elements by the levels, child has {len(child)}"
        )
    if plan.flavor == "fixed":
        return _fixed_list(plan, typ, length, valid, nulls, offsets, child)
    return pa.Array.from_buffers(
        typ, length, [_buf(valid), pa.py_buffer(offsets)], children=[child]
    )


def _buf(x):
    return None if x is None else pa.py_buffer(x)


def _fixed_list(plan, typ, length, valid, nulls, offsets, child):
    size = plan.list_size
    lengths = np.diff(offsets)
    if valid is not None:
        mask = np.unpackbits(valid, bitorder="little")[:length].astype(bool)
    else:
        mask = np.ones(length, dtype=bool)
    if np.any(lengths[mask] != size) or np.any(lengths[~mask] != 0):
        raise DecodeError(f"fixed-size list {plan.name}: entries are not all of size {size}")
    if nulls and size:
        # null entries hold no elements in Parquet but `size` slots in Arrow
        idx = np.repeat(offsets[:-1].astype(np.int64), size) + np.tile(np.arange(size), length)
        child = child.take(pa.array(idx, mask=np.repeat(~mask, size)))
    return pa.Array.from_buffers(typ, length, [_buf(valid)], children=[child])


def _leaf_array(plan: _Plan, col: _Col) -> pa.Array:
    values = col.values
    if col.n_slots == len(values):
        return values
    t = values.type
    buffers = values.buffers()
    if pa.types.is_boolean(t):
        mode, src, width = 1, buffers[1], 0
    elif pa.types.is_binary(t) or pa.types.is_string(t):
        mode, src, width = 2, buffers[1], 0
    elif pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        mode, src, width = 3, buffers[1], 0
    else:
        mode, src, width = 4, None, 0
        if not (
            pa.types.is_dictionary(t) or isinstance(t, pa.BaseExtensionType) or pa.types.is_null(t)
        ):
            try:
                bits = t.bit_width
            except ValueError:
                bits = 0
            if bits and bits % 8 == 0:
                mode, src, width = 0, buffers[1], bits // 8
    valid, nulls, payload = _a.scatter_leaf(
        col.defs,
        plan.slot_def,
        plan.def_present,
        mode,
        src,
        values.offset,
        width,
        len(values),
        col.n_slots,
        _ALLOC,
    )
    n = col.n_slots
    if mode == 4:
        idx = pa.Array.from_buffers(pa.int64(), n, [pa.py_buffer(valid), pa.py_buffer(payload)])
        return values.take(idx)
    if mode in (2, 3):
        return pa.Array.from_buffers(t, n, [pa.py_buffer(valid), pa.py_buffer(payload), buffers[2]])
    return pa.Array.from_buffers(t, n, [pa.py_buffer(valid), pa.py_buffer(payload)])
