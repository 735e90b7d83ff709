"""The Spark conf metaindex reads, in one place: which keys matter, and how they are read.

Which keys (the JVM shim's lists in ``jvm/`` are pinned to these by
``tests/spark/test_conf_keys.py``):

* the ``metaindex.*`` keys below (:data:`METAINDEX_KEYS`): which store, which keys;
* the session's Hadoop S3A settings (:data:`S3A_PREFIXES`): also metaindex's own S3 access;
* the session settings that change what a filter means (:func:`session_keys`: time zone, case
  sensitivity, Parquet rebase read modes, and their legacy ``spark.sql.legacy.parquet.*``
  spellings), read by ``metaindex.engine.prune.SessionSettings.from_spark_conf``;
* the switches of the hook and the extension (:data:`EXTENSIONS_CONF`, :data:`ENABLED_CONF`,
  :data:`PUSHDOWN_CONF`), the pruning process's application conf, read by the JVM only
  (:data:`PROCESS_CONF`), and the executors' Python (:data:`WORKER_PYTHON_CONF`).

How: :class:`SessionConf` captures a session's metaindex, S3A and filter-meaning entries once,
from a live session (:meth:`SessionConf.of_spark`, classic or Connect) or from the conf the JVM
shim sends with each prune request (:meth:`SessionConf.of_request`: every entry whose key
starts with one of :data:`SENT_PREFIXES`, plus :func:`session_keys` with Spark's defaults);
:meth:`SessionConf.settings` and :meth:`SessionConf.session_settings` are what it means.

Every key is optional and is read from the session's runtime conf (``spark.conf.set(...)``), so
it works under classic PySpark and Spark Connect alike. ``spark-submit --conf`` passes only keys
that start with ``spark.``: there, spell them ``spark.metaindex.store`` and so on (read when the
``metaindex.*`` spelling is not set).

==========================================  ===================================================
Key                                         Meaning
==========================================  ===================================================
``metaindex.store``                         one store directory (or URI) for every table's index
                                            (default: ``_metaindex`` next to each table)
``metaindex.encryption.kms``                KMS spec: ``inmemory:keys.json``, ``file:PATH`` or
                                            ``module:Class`` (see ``metaindex.crypto.kms_spec``)
``metaindex.encryption.footer.key``         key label for footers and file-identity columns;
                                            setting it turns store encryption on
``metaindex.encryption.index.keys``         ``label`` for every index column, or
                                            ``label1:col1,col2;label2:col3`` (default: the
                                            footer key); an index added with
                                            ``key_label=`` overrides it
``metaindex.encryption.plaintext.footer``   ``true``: signed plaintext footers
``metaindex.encryption.algorithm``          ``AES_GCM_V1`` (default) or ``AES_GCM_CTR_V1``
``metaindex.encryption.kms.instance.id``    passed to the KMS client in ``KmsConnectionConfig``
``metaindex.encryption.kms.instance.url``   likewise
``metaindex.encryption.key.access.token``   likewise (a credential: never logged)
``metaindex.encryption.double.wrapping``    ``false``: wrap data keys with master keys directly
``metaindex.encryption.data.key.length``    data key bits: 128 (default), 192 or 256
==========================================  ===================================================

Object store access: the session's Hadoop S3A settings, as Spark conf (``spark.hadoop.fs.s3a.*``
given when the session starts, or ``fs.s3a.*`` set on the session, which wins), also configure
metaindex's own S3 access (:func:`metaindex.store.objectstore.s3a_storage_options`: endpoint,
path-style access, keys, session token, region), in the driver, in the Spark tasks of a build
(they receive the same settings) and in the pruning process (the JVM shim sends these keys with
each request). Without them, the standard AWS environment variables apply. S3A settings made
only on the SparkContext's Hadoop configuration object are not seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "Settings",
    "SessionConf",
    "settings",
    "settings_from",
    "conf_entries",
    "session_entries",
    "check_entries",
    "open_index",
    "parse_key_labels",
    "extension_installed",
    "session_keys",
    "is_sent",
    "CONF_STORE",
    "CONF_PREFIX",
    "METAINDEX_KEYS",
    "S3A_PREFIXES",
    "SENT_PREFIXES",
    "LEGACY_PARQUET_PREFIX",
    "EXTENSIONS_CONF",
    "EXTENSION",
    "ENABLED_CONF",
    "PUSHDOWN_CONF",
    "PROCESS_CONF",
    "WORKER_PYTHON_CONF",
]

# ------------------------------------------------------------------------------ the keys

CONF_PREFIX = "metaindex."
CONF_STORE = "metaindex.store"
_KEYS = (
    "store",
    "encryption.kms",
    "encryption.footer.key",
    "encryption.index.keys",
    "encryption.plaintext.footer",
    "encryption.algorithm",
    "encryption.kms.instance.id",
    "encryption.kms.instance.url",
    "encryption.key.access.token",
    "encryption.double.wrapping",
    "encryption.data.key.length",
)
METAINDEX_KEYS = tuple(CONF_PREFIX + name for name in _KEYS)
"""The ``metaindex.*`` keys (each also read as ``spark.metaindex.*``)."""
_ENC = "metaindex.encryption."
S3A_PREFIXES = ("fs.s3a.", "spark.hadoop.fs.s3a.")
"""Spark conf keys of the S3A settings that also configure metaindex's S3 access."""
SENT_PREFIXES = (CONF_PREFIX, "spark." + CONF_PREFIX, *S3A_PREFIXES)
"""The session conf the JVM shim sends with each prune request, by key prefix (Java:
``MetaIndexFileIndex.SENT_PREFIXES``); with the :func:`session_keys`."""
LEGACY_PARQUET_PREFIX = "spark.sql.legacy.parquet."
"""Spark's older spelling of the rebase read modes (``spark.sql.parquet.*`` wins)."""
EXTENSIONS_CONF = "spark.sql.extensions"
EXTENSION = "io.metaindex.spark.MetaIndexExtensions"
"""The class ``spark.sql.extensions`` names to install skipping by conf."""
ENABLED_CONF = "spark.metaindex.enabled"
"""Session conf: ``false`` turns the extension's rule off for the session (Java:
``MetaIndexRule.ENABLED_CONF``)."""
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
"""Session conf the ``metaindex`` Python data source needs (``enable`` sets it)."""
PROCESS_CONF = (
    "spark.metaindex.python",
    "spark.metaindex.pruned.timeout",
    "spark.metaindex.pruned.startTimeout",
    "spark.metaindex.pruned.maxPending",
    "spark.metaindex.pruned.retryAfter",
)
"""Application conf of the pruning process, read by the JVM only (Java: the ``*_CONF``
constants of ``PruningProcess``)."""
WORKER_PYTHON_CONF = "spark.pyspark.python"
"""SparkContext conf naming the executors' Python (read by :mod:`metaindex.spark.executor`)."""


def session_keys() -> tuple:
    """The session conf keys that change what a filter means, as
    ``metaindex.engine.prune.SessionSettings`` reads them (time zone, case sensitivity,
    Parquet rebase read modes). The JVM shim sends each, with Spark's default when unset
    (Java: ``MetaIndexFileIndex.SESSION_KEYS``)."""
    from metaindex.engine.prune import SessionSettings

    return tuple(SessionSettings.SPARK_CONF.values())


def is_sent(key: str) -> bool:
    """Whether the JVM shim sends ``key`` with each request by its prefix."""
    return key.startswith(SENT_PREFIXES)


def _is_session_key(key: str) -> bool:
    return key in session_keys() or key.startswith(LEGACY_PARQUET_PREFIX)


# ------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class SessionConf:
    """The conf of one Spark session that metaindex reads, captured once; hashable (the hook
    caches what each distinct conf means).

    Attributes:
        index: sorted ``(key, value)`` pairs of the ``metaindex.*`` and S3A entries: which
            store, which keys, how to reach the object store (:meth:`settings`).
        session: sorted ``(key, value)`` pairs of the entries that change what a filter
            means (:meth:`session_settings`).
    """

    index: tuple = ()
    session: tuple = ()

    @classmethod
    def of_spark(cls, spark) -> SessionConf:
        """The entries of a live session (classic or Connect): :func:`conf_entries` and
        :func:`session_entries`."""
        return cls(
            tuple(sorted(conf_entries(spark).items())),
            tuple(sorted(session_entries(spark).items())),
        )

    @classmethod
    def of_request(cls, conf: Mapping) -> SessionConf:
        """The entries of the ``conf`` object of a prune request (what the JVM shim sent:
        :data:`SENT_PREFIXES` and :func:`session_keys`); other keys, and null values, are
        not read.

        Raises:
            TypeError: ``conf`` is not a mapping with str keys.
        """
        if not isinstance(conf, Mapping) or not all(isinstance(k, str) for k in conf):
            raise TypeError(f"a request's conf is an object with string keys, not {conf!r}")
        entries = [(k, str(v)) for k, v in conf.items() if v is not None]
        return cls(
            tuple(sorted((k, v) for k, v in entries if is_sent(k))),
            tuple(sorted((k, v) for k, v in entries if _is_session_key(k))),
        )

    def settings(self) -> Settings:
        """What the ``metaindex.*`` and S3A entries say (:func:`settings_from`).

        Raises:
            MetaIndexError: a malformed value, or encryption keys without a KMS.
        """
        return settings_from(dict(self.index))

    def session_settings(self):
        """The ``metaindex.engine.prune.SessionSettings`` of the session entries.

        Raises:
            TypeError / ValueError: a value the settings do not take.
        """
        from metaindex.engine.prune import SessionSettings

        return SessionSettings.from_spark_conf(dict(self.session))


@dataclass(frozen=True)
class Settings:
    """The metaindex conf of one session, read once.

    Attributes:
        store: the store directory or URI (None: next to each table).
        encryption: a ``metaindex.StoreEncryption`` (None: the store is not encrypted).
        storage_options: object store settings from the session's S3A conf (None: none set).
    """

    store: str | None = None
    encryption: object = None
    storage_options: dict | None = None


def _bool(key: str, text: str | None, default: bool) -> bool:
    from metaindex.errors import MetaIndexError

    if text is None or text == "":
        return default
    low = text.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise MetaIndexError(f"conf {key}={text!r}: expected true or false")


def parse_key_labels(text: str | None):
    """``"label"`` -> "label"; ``"l1:c1,c2;l2:c3"`` -> {column: label}; empty -> None.

    Raises:
        MetaIndexError: a malformed mapping.
    """
    from metaindex.errors import MetaIndexError

    if text is None or not text.strip():
        return None
    text = text.strip()
    if ":" not in text:
        return text
    out = {}
    for group in text.split(";"):
        if not group.strip():
            continue
        label, sep, cols = group.partition(":")
        label = label.strip()
        names = [c.strip() for c in cols.split(",") if c.strip()]
        if not sep or not label or not names:
            raise MetaIndexError(
                f"index key labels {text!r}: expected 'label' or 'label1:col1,col2;label2:col3'"
            )
        for name in names:
            out[name] = label
    return out


def settings_from(conf: dict) -> Settings:
    """:class:`Settings` from a {key: value} dict of ``metaindex.*`` (or ``spark.metaindex.*``)
    conf entries.

    Raises:
        MetaIndexError: a malformed value, or encryption keys without a KMS.
    """
    from metaindex.api import StoreEncryption
    from metaindex.crypto import KmsConnectionConfig
    from metaindex.crypto.kms_spec import kms_factory
    from metaindex.errors import MetaIndexError
    from metaindex.store.objectstore import s3a_storage_options

    def get(name):
        value = conf.get(CONF_PREFIX + name)
        if value is None:
            value = conf.get("spark." + CONF_PREFIX + name)
        return None if value is None or str(value).strip() == "" else str(value).strip()

    encryption: StoreEncryption | _ReadOnlyKeys | None = None
    footer = get("encryption.footer.key")
    kms = get("encryption.kms")
    if footer is not None and kms is None:
        raise MetaIndexError(
            f"{_ENC}footer.key is set but {_ENC}kms is not: name the KMS "
            "('inmemory:keys.json', 'file:PATH' or 'module:Class')"
        )
    if kms is not None:
        config = KmsConnectionConfig(
            get("encryption.kms.instance.id") or "",
            kms_instance_url=get("encryption.kms.instance.url") or "",
            key_access_token=get("encryption.key.access.token") or "",
        )
    if footer is not None:
        length = get("encryption.data.key.length") or "128"
        if length not in ("128", "192", "256"):
            raise MetaIndexError(f"{_ENC}data.key.length={length!r}: expected 128, 192 or 256")
        encryption = StoreEncryption(
            kms_factory(kms),
            footer,
            index_keys=parse_key_labels(get("encryption.index.keys")),
            kms_connection_config=config,
            plaintext_footer=_bool(
                _ENC + "plaintext.footer", get("encryption.plaintext.footer"), False
            ),
            algorithm=get("encryption.algorithm") or "AES_GCM_V1",
            double_wrapping=_bool(
                _ENC + "double.wrapping", get("encryption.double.wrapping"), True
            ),
            data_key_length_bits=int(length),
        )
    elif kms is not None:
        # A KMS without a footer key: the store is read (and maybe decrypted) but new
        # indexes are written in plaintext. Reading an encrypted store needs only the KMS.
        encryption = _ReadOnlyKeys(kms_factory(kms), config)
    return Settings(get("store"), encryption, s3a_storage_options(conf) or None)


class _ReadOnlyKeys:
    """Key access for reading an encrypted store when no footer key is configured."""

    def __init__(self, factory, config):
        self.kms_client_factory = factory
        self.kms_connection_config = config


def conf_entries(spark) -> dict:
    """The session's metaindex conf as {``metaindex.<name>``: value}, each key read under its
    ``metaindex.*`` spelling, else ``spark.metaindex.*`` (classic or Connect session); plus
    its S3A settings (``fs.s3a.*``, ``spark.hadoop.fs.s3a.*``) as they are."""
    conf = {}
    for key in METAINDEX_KEYS:
        value = spark.conf.get(key, None)
        if value is None:
            value = spark.conf.get("spark." + key, None)
        if value is not None:
            conf[key] = value
    for key, value in _all_conf(spark).items():
        if key.startswith(S3A_PREFIXES) and value is not None:
            conf[key] = value
    return conf


def session_entries(spark) -> dict:
    """The session's :func:`session_keys` entries as it has them (its defaults included)."""
    out = {}
    for key in session_keys():
        try:
            value = spark.conf.get(key, None)
        except Exception:  # noqa: BLE001 - a conf this Spark does not have
            value = None
        if value is not None:
            out[key] = value
    return out


def extension_installed(spark) -> bool:
    """Whether the session's application runs the metaindex extension (:data:`EXTENSION` in
    :data:`EXTENSIONS_CONF`)."""
    try:
        names = str(spark.conf.get(EXTENSIONS_CONF, "") or "")
    except Exception:  # noqa: BLE001 - a conf Connect refuses to read
        return False
    return EXTENSION in [n.strip() for n in names.split(",")]


def _all_conf(spark) -> dict:
    """Every conf entry of the session: ``spark.conf.getAll`` (PySpark 4), else the
    SparkContext's conf (classic PySpark 3.5, which has no ``getAll``)."""
    try:
        return dict(spark.conf.getAll)
    except AttributeError:
        pass
    try:
        return dict(spark.sparkContext.getConf().getAll())
    except Exception:  # noqa: BLE001 - a Connect client of an old server: no such settings
        return {}


def check_entries(conf) -> dict:
    """``conf`` as {``metaindex.<name>``: str value}, every key one this module reads.

    Raises:
        MetaIndexError: a key that is not a ``metaindex.*`` key listed above.
        TypeError: ``conf`` is not a mapping.
    """
    from metaindex.errors import MetaIndexError

    if not isinstance(conf, Mapping):
        raise TypeError(f"conf is a mapping of metaindex.* keys to values, not {conf!r}")
    known = set(METAINDEX_KEYS)
    out = {}
    for key, value in conf.items():
        if key not in known:
            raise MetaIndexError(f"unknown conf key {key!r}; known: {sorted(known)}")
        if value is not None:
            out[key] = str(value)
    return out


def settings(spark) -> Settings:
    """The ``metaindex.*`` conf of ``spark`` (classic or Connect session)."""
    return settings_from(conf_entries(spark))


def _other_object_store(*locations) -> bool:
    """Whether a location is an object store URI other than S3 (gs://, az://, abfs://...)."""
    from urllib.parse import urlsplit

    from metaindex.store.objectstore import canonical_scheme, is_object_store_uri

    return any(
        isinstance(x, str)
        and is_object_store_uri(x)
        and canonical_scheme(urlsplit(x).scheme) != "s3"
        for x in locations
    )


def open_index(
    table, conf: Settings, store=None, *, filesystem=None, storage_options=None, formats=None
):
    """The core ``metaindex.MetaIndex`` of ``table`` under ``conf`` (``store`` overrides
    ``conf.store``; ``storage_options`` configure object stores, default
    ``conf.storage_options`` unless the table or store is on another object store than S3;
    ``formats``: a ``metaindex.formats.FormatSpec`` to build with)."""
    from metaindex.api import MetaIndex, StoreEncryption
    from metaindex.store import KeyAccess, MetadataStore

    enc = conf.encryption
    store = store if store is not None else conf.store
    if storage_options is None and not _other_object_store(table, store):
        storage_options = conf.storage_options  # S3 settings: not for a gs:// or az:// one
    if isinstance(enc, _ReadOnlyKeys):
        if store is None or isinstance(store, str):
            from metaindex.api import default_store
            from metaindex.engine.listing import locate_table

            store_fs = None
            if store is None:
                store, store_fs = default_store(locate_table(table, filesystem, storage_options))
            store = MetadataStore(
                store,
                filesystem=store_fs,
                key_access=KeyAccess(enc.kms_client_factory, enc.kms_connection_config),
                storage_options=storage_options,
            )
        enc = None
    elif enc is not None and not isinstance(enc, StoreEncryption):
        raise TypeError(f"conf.encryption must be a StoreEncryption, not {type(enc).__name__}")
    format_args = (
        {}
        if formats is None
        else {
            "format": formats.data,
            "format_options": formats.options,
            "table_format": formats.table,
        }
    )
    return MetaIndex(
        table,
        store,
        filesystem=filesystem,
        encryption=enc,
        storage_options=storage_options,
        **format_args,
    )
