"""Spark conf keys read by the metaindex PySpark layer, and opening a table's index from them.

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

from dataclasses import dataclass

__all__ = ["Settings", "settings", "settings_from", "conf_entries", "check_entries", "open_index",
           "parse_key_labels", "CONF_STORE", "CONF_PREFIX", "S3A_PREFIXES"]

CONF_PREFIX = "metaindex."
CONF_STORE = "metaindex.store"
S3A_PREFIXES = ("fs.s3a.", "spark.hadoop.fs.s3a.")
"""Spark conf keys of the S3A settings that also configure metaindex's S3 access."""
_ENC = "metaindex.encryption."
_KEYS = ("store", "encryption.kms", "encryption.footer.key", "encryption.index.keys",
         "encryption.plaintext.footer", "encryption.algorithm", "encryption.kms.instance.id",
         "encryption.kms.instance.url", "encryption.key.access.token",
         "encryption.double.wrapping", "encryption.data.key.length")


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
            raise MetaIndexError(f"index key labels {text!r}: expected 'label' or "
                                 "'label1:col1,col2;label2:col3'")
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

    encryption = None
    footer = get("encryption.footer.key")
    kms = get("encryption.kms")
    if footer is not None and kms is None:
        raise MetaIndexError(f"{_ENC}footer.key is set but {_ENC}kms is not: name the KMS "
                             "('inmemory:keys.json', 'file:PATH' or 'module:Class')")
    if kms is not None:
        config = KmsConnectionConfig(get("encryption.kms.instance.id") or "",
                                     kms_instance_url=get("encryption.kms.instance.url") or "",
                                     key_access_token=get("encryption.key.access.token") or "")
    if footer is not None:
        length = get("encryption.data.key.length") or "128"
        if length not in ("128", "192", "256"):
            raise MetaIndexError(f"{_ENC}data.key.length={length!r}: expected 128, 192 or 256")
        encryption = StoreEncryption(
            kms_factory(kms), footer,
            index_keys=parse_key_labels(get("encryption.index.keys")),
            kms_connection_config=config,
            plaintext_footer=_bool(_ENC + "plaintext.footer",
                                   get("encryption.plaintext.footer"), False),
            algorithm=get("encryption.algorithm") or "AES_GCM_V1",
            double_wrapping=_bool(_ENC + "double.wrapping",
                                  get("encryption.double.wrapping"), True),
            data_key_length_bits=int(length))
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
    for name in _KEYS:
        key = CONF_PREFIX + name
        value = spark.conf.get(key, None)
        if value is None:
            value = spark.conf.get("spark." + key, None)
        if value is not None:
            conf[key] = value
    for key, value in _all_conf(spark).items():
        if key.startswith(S3A_PREFIXES) and value is not None:
            conf[key] = value
    return conf


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
    from collections.abc import Mapping

    from metaindex.errors import MetaIndexError

    if not isinstance(conf, Mapping):
        raise TypeError(f"conf is a mapping of metaindex.* keys to values, not {conf!r}")
    known = {CONF_PREFIX + name for name in _KEYS}
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

    return any(isinstance(x, str) and is_object_store_uri(x)
               and canonical_scheme(urlsplit(x).scheme) != "s3" for x in locations)


def open_index(table, conf: Settings, store=None, *, filesystem=None, storage_options=None):
    """The core ``metaindex.MetaIndex`` of ``table`` under ``conf`` (``store`` overrides
    ``conf.store``; ``storage_options`` configure object stores, default
    ``conf.storage_options`` unless the table or store is on another object store than S3)."""
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
                store, store_fs = default_store(locate_table(table, filesystem,
                                                             storage_options))
            store = MetadataStore(store, filesystem=store_fs,
                                  key_access=KeyAccess(enc.kms_client_factory,
                                                       enc.kms_connection_config),
                                  storage_options=storage_options)
        enc = None
    elif enc is not None and not isinstance(enc, StoreEncryption):
        raise TypeError(f"conf.encryption must be a StoreEncryption, not {type(enc).__name__}")
    return MetaIndex(table, store, filesystem=filesystem, encryption=enc,
                     storage_options=storage_options)
