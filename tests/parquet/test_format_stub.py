"""The typed view of the Thrift model (``format.pyi``) matches the field tables."""

import subprocess
import sys
from pathlib import Path

from metaindex.parquet import format as fmt

ROOT = Path(__file__).resolve().parents[2]


def test_stub_is_in_sync_with_the_field_tables():
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_format_pyi.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_stub_declares_every_field_with_its_optionality():
    stub = Path(fmt.__file__).with_suffix(".pyi").read_text()
    assert "    bloom_filter_offset: int | None\n" in stub, "optional field: T | None"
    assert "    num_values: int\n" in stub, "required field: decoding guarantees it"
    assert "    schema: list[SchemaElement]\n" in stub, "list of structs"
