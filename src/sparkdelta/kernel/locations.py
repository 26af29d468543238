"""Which storage serves a table location: the local disk, an object store, or a refusal naming what is missing.

Object stores are imported only for object-store locations, so local tables never load obstore.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import unquote, urlparse

from .storage import LocalStorage, Storage


def resolve_table_root(location: str, storage_options: Mapping[str, str] | None = None) -> tuple[Storage, str]:
    """Storage and normalized root path for a table location.

    Local paths and ``file:`` URIs go to the local disk; ``s3://``, ``s3a://``, ``gs://``,
    ``az://``, ``abfs[s]://`` and ``wasb[s]://`` to ``object_store.ObjectStoreStorage``
    (imported only then), configured by ``storage_options`` and the environment.
    """
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file"):
        local = unquote(parsed.path) if scheme == "file" else location
        return LocalStorage(), os.path.abspath(local).rstrip("/") or "/"
    if scheme in _OBJECT_STORE_SCHEMES:
        from .object_store import resolve

        return resolve(location, storage_options)
    if scheme in ("hdfs", "viewfs"):
        raise NotImplementedError(_hdfs_refusal(location))
    raise NotImplementedError(
        f"no storage for scheme '{parsed.scheme}' in '{location}': local paths, "
        f"{', '.join(s + '://' for s in _OBJECT_STORE_SCHEMES)} are built in; "
        "implement sparkdelta.kernel.storage.Storage for others"
    )


# Listed here, not taken from object_store, so that local tables never import obstore.
_OBJECT_STORE_SCHEMES = ("s3", "s3a", "gs", "az", "azure", "abfs", "abfss", "wasb", "wasbs")


def _hdfs_refusal(location: str) -> str:
    """Why ``location`` cannot be opened: HDFS needs libhdfs and a JVM, which pyarrow loads at run time."""
    hadoop_home = os.environ.get("HADOOP_HOME")
    search = [os.environ.get("ARROW_LIBHDFS_DIR"), f"{hadoop_home}/lib/native" if hadoop_home else None]
    libhdfs = next((d for d in search if d and os.path.exists(f"{d}/libhdfs.so")), None)
    missing = [
        what
        for what, present in (
            ("libhdfs.so (set HADOOP_HOME or ARROW_LIBHDFS_DIR)", libhdfs is not None),
            ("a JVM (JAVA_HOME)", bool(os.environ.get("JAVA_HOME"))),
            ("the Hadoop jars (CLASSPATH from `hadoop classpath --glob`)", bool(os.environ.get("CLASSPATH"))),
        )
        if not present
    ]
    if missing:
        return f"cannot open '{location}': HDFS needs {', '.join(missing)}, which this machine lacks"
    return f"cannot open '{location}': the kernel has no HDFS storage yet (libhdfs is at {libhdfs}); read it through Spark"
