"""Between the log's file paths and the strings Spark's file sources use.

The log holds RFC 2396-encoded paths, usually relative to the table root. Spark's
readers take Hadoop path strings (decoded), and report ``_metadata.file_path`` as the
``java.net.URI`` form of that path, so joining scan rows back to their log entry needs
exactly that spelling.

A location is a decoded absolute local path (``/data/t/a b.parquet``) or a decoded
object-store URL in the kernel's spelling (``s3://bucket/t/a b.parquet``). Spark reaches
the latter through Hadoop's file system for its scheme (``s3a://`` for S3, see
``kernel.object_store.hadoop_url``), which the user's cluster provides.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

from ..exceptions import DeltaUnsupportedOperationException
from ..kernel.file_paths import file_path
from ..kernel.object_store import PROVIDERS, canonical_root, hadoop_url
from .pyspark_classes import is_connect

# java.net.URI leaves these unescaped in a path (unreserved, punct, '/', '@');
# other ASCII characters are percent-encoded.
_URI_PATH_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-!.~'()*,;:$&+=/@")
_URI_PATH_SAFE_RUN = re.compile(r"[A-Za-z0-9_\-!.~'()*,;:$&+=/@]*\Z")

# A relative log path that decodes and normalizes to itself: segments that are not
# empty, do not start with "." and hold no "%" or ":". Writers name nearly every file so.
_PLAIN_RELATIVE = re.compile(r"[A-Za-z0-9_\-=+,@~][A-Za-z0-9_\-=+.,@~]*(?:/[A-Za-z0-9_\-=+,@~][A-Za-z0-9_\-=+.,@~]*)*\Z")


def _java_uri_keeps(c: str) -> bool:
    """Whether ``java.net.URI`` keeps ``c`` literally in a path.

    Non-ASCII characters are kept ("other" characters) unless Java calls them space
    characters (``Character.isSpaceChar``: categories Zs, Zl, Zp, e.g. U+00A0, U+3000)
    or ISO controls (U+0080..U+009F): those are percent-encoded as UTF-8.
    """
    if c in _URI_PATH_SAFE:
        return True
    code = ord(c)
    if code < 0x80:
        return False
    return not (code <= 0x9F or unicodedata.category(c) in ("Zs", "Zl", "Zp"))


def _normalize(path: str) -> str:
    """What ``org.apache.hadoop.fs.Path`` makes of an absolute path: repeated slashes
    collapsed, ``.`` and ``..`` segments resolved lexically (``URI.normalize``)."""
    path = re.sub("/{2,}", "/", path)
    return posixpath.normpath(path) if path.startswith("/") else path


def is_object_store(location: str) -> bool:
    """Whether ``location`` is an object-store URL (``s3://``, ``s3a://``, ``gs://``, ``abfss://``...)."""
    scheme, sep, _ = location.partition("://")
    return bool(sep) and scheme.lower() in PROVIDERS


def absolute_path(table_root: str, log_path: str) -> str:
    """The location of a file named in the log: a decoded absolute local path, or a decoded
    object-store URL; a relative path leading out of the root is refused
    (``PathOutsideTableError``)."""
    resolved = file_path(table_root, log_path)
    if resolved.startswith("/"):
        return _normalize(resolved)
    if is_object_store(resolved):
        # file_path joins relative paths decoded, and returns absolute URLs as written.
        decoded = unquote(resolved) if is_object_store(log_path) else resolved
        return canonical_root(_normalize_url(decoded))
    raise NotImplementedError(f"file {log_path!r} of {table_root} is on a file system sparkdelta cannot reach")


def absolute_paths(table_root: str, log_paths: list[str]) -> list[str]:
    """``absolute_path`` of each of ``log_paths``: plain relative ones (most) joined to
    the root directly, the others resolved one by one (100,000 paths in 0.1 s, not 1 s)."""
    prefix = absolute_path(table_root, "_")[:-1]  # the resolved root and its slash
    return [prefix + path if _PLAIN_RELATIVE.match(path) else absolute_path(table_root, path) for path in log_paths]


def spark_file_uris(table_root: str, log_paths: list[str]) -> list[str]:
    """``spark_file_uri(absolute_path(...))`` of each of ``log_paths``, plain ones by the same shortcut
    (their characters are all ones ``java.net.URI`` keeps)."""
    prefix = spark_file_uri(absolute_path(table_root, "_"))[:-1]
    return [
        prefix + path if _PLAIN_RELATIVE.match(path) else spark_file_uri(absolute_path(table_root, path)) for path in log_paths
    ]


def _java_uri_path(path: str) -> str:
    if _URI_PATH_SAFE_RUN.match(path):
        return path
    return "".join(c if _java_uri_keeps(c) else "".join(f"%{b:02X}" for b in c.encode()) for c in path)


def spark_file_uri(location: str) -> str:
    """``new org.apache.hadoop.fs.Path(hadoop_path(location)).toUri().toString()``.

    This is how Spark reports ``_metadata.file_path`` for a file read through
    ``hadoop_path(location)``; for a relative path, the encoding delta-spark logs.
    """
    if is_object_store(location):
        scheme, _, rest = hadoop_path(_normalize_url(location)).partition("://")
        authority, slash, path = rest.partition("/")
        return f"{scheme}://{authority}{_java_uri_path(slash + path)}"
    return f"file:{_java_uri_path(_normalize(location))}"


# Hadoop's glob syntax, which Spark's readers expand in the paths they are given.
_GLOB_CHARACTERS = re.compile(r"([{}\[\]*?\\])")


def hadoop_path(location: str) -> str:
    """A string Spark's writers (and SQL's ``LOCATION``) take for a location, as it is:
    no URI decoding happens. Readers take ``read_path``'s, under ``scan_options``."""
    if is_object_store(location):
        return hadoop_url(location)
    return f"file://{location}"


def scan_options(spark: SparkSession) -> dict[str, str]:
    """Reader options for the kernel's paths (``read_path``).

    A listed folder (``read/parquet.py``'s ``_scan_listed``) is read recursively, with no
    partition columns inferred from ``p=v`` folder names (the log has the partition
    values); a no-op for a file's path. A classic session also turns Hadoop's glob
    expansion off (DataSource's ``__globPaths__``), so every path is taken literally. A
    Spark Connect server lower-cases option keys and then ignores that one: there
    ``read_path`` escapes the glob characters instead.
    """
    options = {"recursiveFileLookup": "true"}
    if not is_connect(spark):
        options["__globPaths__"] = "false"
    return options


def read_path(spark: SparkSession, location: str) -> str:
    """``hadoop_path`` for Spark's readers, under ``scan_options``: on a Spark Connect session
    with Hadoop's glob characters (``{}[]*?\\``) escaped, so a table folder ``t [1]`` reads as itself.

    Hadoop's glob expansion cannot take a folder name holding ``:`` (it parses it as a URI
    scheme), so such a path with glob characters is refused by name there.
    """
    path = hadoop_path(location)
    if not is_connect(spark) or not _GLOB_CHARACTERS.search(path):
        return path
    if any(":" in part for part in location.split("://", 1)[-1].split("/")):
        raise DeltaUnsupportedOperationException(
            f"{location}: on a Spark Connect session, a path holding both glob characters ({{}}[]*?\\) and a folder "
            "name with ':' cannot be read: the server expands globs in read paths (it ignores the option that turns "
            "this off), and Hadoop's glob expansion cannot parse a ':' in a folder name. Rename the folder, or read "
            "the table from a classic session"
        )
    return _GLOB_CHARACTERS.sub(r"\\\1", path)


def spark_lists(folder: str) -> bool:
    """Whether Spark's file listing descends into a folder of this name: not hidden
    (``.``, or ``_`` unless a partition folder such as ``_p=1``)."""
    return not folder.startswith(".") and (not folder.startswith("_") or "=" in folder)


def qualified(location: str) -> str:
    """A location as delta-spark reports it (``DESCRIBE DETAIL``, OPTIMIZE and VACUUM results):
    ``file:/path`` locally, the Hadoop URL (``s3a://...``) on an object store."""
    return hadoop_path(location) if is_object_store(location) else f"file:{location}"


def log_path(relative: str) -> str:
    """How delta-spark writes a relative file path into the log (java.net.URI encoding)."""
    return spark_file_uri(relative)[len("file:") :]


def location_from_uri(uri: str) -> str:
    """A location the catalog reports (``java.net.URI`` text, percent-encoded), as ``normalize_location`` gives it."""
    return canonical_root(_normalize_url(unquote(uri))) if is_object_store(uri) else normalize_location(uri)


def _normalize_url(url: str) -> str:
    """An object-store URL with its key normalized as Hadoop's ``Path`` does (``//``, ``.``, ``..``)."""
    scheme, _, rest = url.partition("://")
    authority, slash, key = rest.partition("/")
    if not slash:
        return url
    key = posixpath.normpath("/" + re.sub("/{2,}", "/", key)).lstrip("/")
    return f"{scheme}://{authority}/{key}"


def normalize_location(location: str) -> str:
    """A location as the user or the catalog gives it (``file:/a%20b`` URI, plain path, or
    object-store URL), as a decoded local path or an object-store URL in the kernel's spelling."""
    if is_object_store(location):
        return canonical_root(_normalize_url(location))
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return _normalize(unquote(parsed.path))
    if parsed.scheme:
        raise NotImplementedError(
            f"location {location!r}: sparkdelta reaches local paths and object stores "
            f"({', '.join(sorted(s + '://' for s in PROVIDERS))}), not '{parsed.scheme}://'"
        )
    return _normalize(location)
