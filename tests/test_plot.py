"""The min/max range picture (metaindex.plot; MetaIndex.plot, ``metaindex describe --plot``)."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from metaindex import MetaIndex
from metaindex.cli.app import cli
from metaindex.engine.executors import SerialExecutor
from metaindex.errors import MissingDependencyError, UnsupportedFeatureError
from tests.engine.layouts import write_copies

pytest.importorskip("matplotlib", reason="the plot extra: pip install metaindex[plot]")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = tmp_path_factory.mktemp("plot")
    paths = write_copies(str(root))
    store = str(root / "_store")
    MetaIndex(paths["random"], store=store).index_builder().add_min_max_index(
        "x"
    ).add_min_max_index("day").add_min_max_index("city").add_bloom_filter_index("id").build(
        executor=SerialExecutor()
    )
    return paths["random"], store


def test_plot_png(indexed, tmp_path):
    table, store = indexed
    out = MetaIndex(table, store=store).plot(tmp_path / "ranges.png", title="random copy")
    data = open(out, "rb").read()
    assert data.startswith(PNG), "a PNG file"
    assert len(data) > 20_000, f"three panels of 40 ranges, not an empty canvas ({len(data)} B)"
    one = MetaIndex(table, store=store).plot(tmp_path / "x.svg", columns=["x"])
    assert b"<svg" in open(one, "rb").read(2000), "the format follows the extension"


def test_cli_describe_plot(indexed, tmp_path):
    table, store = indexed
    target = tmp_path / "d.png"
    done = CliRunner().invoke(
        cli, ["describe", table, "--store", store, "--plot", str(target), "--json"]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["plot"] == str(target)
    assert target.read_bytes().startswith(PNG)


def test_nothing_to_draw(tmp_path):
    paths = write_copies(str(tmp_path))
    mi = MetaIndex(paths["clustered"], store=str(tmp_path / "s"))
    mi.index_builder().add_bloom_filter_index("id").build(executor=SerialExecutor())
    with pytest.raises(ValueError, match="no min/max index"):
        mi.plot(tmp_path / "none.png")


def test_missing_matplotlib_is_a_typed_error(indexed, tmp_path, monkeypatch):
    table, store = indexed
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependencyError, match=r"pip install metaindex\[plot\]") as info:
        MetaIndex(table, store=store).plot(tmp_path / "no.png")
    assert isinstance(info.value, ImportError) and isinstance(info.value, UnsupportedFeatureError)
    assert not (tmp_path / "no.png").exists()
