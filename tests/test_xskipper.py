"""metaindex.xskipper without Spark: every io.xskipper.* key mapped, accepted or refused with a
typed error naming it; Registration's names and Python index classes; metadata-store manager
names (an unknown one is refused before anything touches the filesystem)."""

from __future__ import annotations

import os
import warnings

import pytest

from metaindex.errors import MetaIndexError, UnsupportedFeatureError
from metaindex.index import KINDS
from metaindex.xskipper import Registration, Xskipper, XskipperException, conf
from metaindex.xskipper.conf import XskipperConfWarning
from tests.index.strlen_index import StrLenIndex


@pytest.fixture(autouse=True)
def clean_conf():
    conf.clear()
    yield
    conf.clear()


def test_location_and_encryption_keys_map_onto_metaindex_conf():
    conf.set_entries(
        {
            "io.xskipper.parquet.mdlocation": "/idx",
            "io.xskipper.parquet.mdlocation.type": "EXPLICIT_BASE_PATH_LOCATION",
            "io.xskipper.parquet.encryption.footer.key": "k1",
            "io.xskipper.parquet.encryption.plaintext.footer": "TRUE",
        }
    )
    assert conf.get("io.xskipper.parquet.mdlocation") == "/idx"
    assert conf.metaindex_conf(conf.get_all()) == {
        "metaindex.encryption.footer.key": "k1",
        "metaindex.encryption.plaintext.footer": "true",
    }
    assert (
        conf.effective({"io.xskipper.parquet.mdlocation": "/other"})[
            "io.xskipper.parquet.mdlocation"
        ]
        == "/other"
    ), "instance params win"


def test_legacy_prefix_and_bloom_fpp_default():
    conf.set_entries({"spark.ibm.metaindex.index.bloom.fpp": "0.2"})
    assert conf.get("io.xskipper.index.bloom.fpp") == "0.2"
    assert conf.bloom_fpp(conf.get_all()) == 0.2
    assert conf.bloom_fpp({}) == 0.01
    conf.unset("io.xskipper.index.bloom.fpp")
    assert conf.get("io.xskipper.index.bloom.fpp") is None


def test_dedup_keys_are_accepted_quietly():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        conf.set_entries(
            {
                "io.xskipper.parquet.filter.dedup": "false",
                "io.xskipper.parquet.refresh.dedup": "true",
            }
        )


def test_tuning_keys_warn_that_they_do_nothing():
    with pytest.warns(XskipperConfWarning, match="io.xskipper.index.parallelism"):
        conf.set_entries({"io.xskipper.index.parallelism": "20"})
    assert conf.get("io.xskipper.index.parallelism") == "20"


@pytest.mark.parametrize(
    "key, value, error, match",
    [
        ("io.xskipper.no.such.key", "1", UnsupportedFeatureError, "io.xskipper.no.such.key"),
        ("spark.sql.shuffle.partitions", "2", UnsupportedFeatureError, "spark.sql.shuffle"),
        ("io.xskipper.evaluation.enabled", "true", UnsupportedFeatureError, "evaluation"),
        (
            "io.xskipper.identifierclass",
            "io.xskipper.utils.identifier.IBMCOSIdentifier",
            UnsupportedFeatureError,
            "IBMCOSIdentifier",
        ),
        ("io.xskipper.parquet.mdlocation.type", "SOMEWHERE", MetaIndexError, "EXPLICIT_LOCATION"),
        ("io.xskipper.index.bloom.fpp", "1.5", MetaIndexError, "between 0 and 1"),
        ("io.xskipper.parquet.encryption.plaintext.footer", "maybe", MetaIndexError, "true or"),
        ("io.xskipper.timeout", "-3", MetaIndexError, "whole number"),
    ],
)
def test_unsupported_or_malformed_values_raise_naming_the_key(key, value, error, match):
    with pytest.raises(error, match=match):
        conf.set_entries({"io.xskipper.parquet.mdlocation": "/idx", key: value})
    assert conf.get_all() == {}, "a refused entry sets nothing of its batch"


def test_accepted_defaults_of_refused_features():
    conf.set_entries(
        {
            "io.xskipper.evaluation.enabled": "false",
            "io.xskipper.identifierclass": "io.xskipper.utils.identifier.Identifier",
        }
    )


def test_xskipper_exception_is_metaindex_error():
    assert XskipperException is MetaIndexError
    assert Xskipper.installExceptionWrapper() is None


def test_unknown_metadata_store_manager_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsupportedFeatureError, match="metadata store manager"):
        Xskipper(None, str(tmp_path / "data"), "com.ibm.metaindex.metadatastore.parquet.Parquet")
    assert os.listdir(tmp_path) == [], "no store directory named after the class"


def test_parquet_manager_names_are_accepted():
    for name in (
        "io.xskipper.metadatastore.parquet.ParquetMetadataStoreManager",
        "io.xskipper.metadatastore.parquet.Parquet$",
        "com.ibm.metaindex.metadata.metadatastore.parquet.Parquet",
    ):
        Registration.setActiveMetadataStoreManager(None, name)
        assert (
            Registration.getActiveMetadataStoreManagerType(None)
            == "io.xskipper.metadatastore.parquet.Parquet$"
        )
    with pytest.raises(UnsupportedFeatureError):
        Registration.setActiveMetadataStoreManager(None, "org.example.MyStoreManager")


def test_python_metadata_store_manager():
    def manager(spark, table_uri, params):
        return "/somewhere"

    Registration.setActiveMetadataStoreManager(None, manager)
    try:
        assert Registration.getActiveMetadataStoreManagerType(None).endswith(
            "test_python_metadata_store_manager.<locals>.manager"
        )
    finally:
        Registration.setActiveMetadataStoreManager(
            None, "io.xskipper.metadatastore.parquet.Parquet"
        )


def test_builtin_plugin_names_are_accepted_and_scala_plugins_refused():
    Registration.addMetadataFilterFactory(None, "io.xskipper.search.filters.BaseFilterFactory")
    Registration.addIndexFactory(None, "io.xskipper.index.BaseIndexFactory")
    Registration.addMetaDataTranslator(
        None, "io.xskipper.metadatastore.parquet.ParquetBaseMetaDataTranslator"
    )
    Registration.addClauseTranslator(
        None, "io.xskipper.metadatastore.parquet.ParquetBaseClauseTranslator"
    )
    with pytest.raises(UnsupportedFeatureError, match="io.xskipper.plugins.regex"):
        Registration.addIndexFactory(None, "io.xskipper.plugins.regex.index.RegexIndexFactory")
    with pytest.raises(UnsupportedFeatureError, match="Scala plugins"):
        Registration.addClauseTranslator(
            None, "io.xskipper.plugins.regex.parquet.RegexValueListClauseTranslator"
        )


def test_python_index_classes_register_as_index_kinds():
    KINDS.pop("strlen", None)
    try:
        Registration.addIndexFactory(None, "tests.index.strlen_index:StrLenIndex")
        assert KINDS["strlen"] is StrLenIndex
        Registration.addMetadataFilterFactory(None, StrLenIndex)  # the same class: idempotent
        with pytest.raises(TypeError):
            Registration.addIndexFactory(None, "os.path:join")
    finally:
        KINDS.pop("strlen", None)


def test_metaindex_conf_overrides_are_checked():
    from metaindex.spark.config import check_entries

    assert check_entries({"metaindex.encryption.footer.key": "k1", "metaindex.store": None}) == {
        "metaindex.encryption.footer.key": "k1"
    }
    with pytest.raises(MetaIndexError, match="unknown conf key"):
        check_entries({"io.xskipper.parquet.mdlocation": "/x"})
