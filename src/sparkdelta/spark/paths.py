"""Between the log's file paths and the strings Spark's file sources use.

The log holds RFC 2396-encoded paths, usually relative to the table root. Spark's
readers take Hadoop path strings (decoded), and report ``_metadata.file_path`` as the
``java.net.URI`` form of that path, so joining scan rows back to their log entry needs
exactly that spelling.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from urllib.parse import unquote, urlparse

from ..kernel.file_paths import file_path

# java.net.URI leaves these unescaped in a path (unreserved, punct, '/', '@');
# other ASCII characters are percent-encoded.
_URI_PATH_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-!.~'()*,;:$&+=/@")


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


def absolute_path(table_root: str, log_path: str) -> str:
    """The decoded absolute path of a file named in the log; a relative path leading out of
    the root is refused (``PathOutsideTableError``)."""
    resolved = file_path(table_root, log_path)
    if not resolved.startswith("/"):
        raise NotImplementedError(f"file {log_path!r} is on another file system; only local tables are supported")
    return _normalize(resolved)


def spark_file_uri(path: str) -> str:
    """``new org.apache.hadoop.fs.Path(path).toUri().toString()`` for a local absolute path.

    This is how Spark reports ``_metadata.file_path`` for a file read through
    ``hadoop_path(path)``; for a relative path, the encoding delta-spark logs.
    """
    path = _normalize(path)
    encoded = "".join(c if _java_uri_keeps(c) else "".join(f"%{b:02X}" for b in c.encode()) for c in path)
    return f"file:{encoded}"


def hadoop_path(path: str) -> str:
    """A string Spark's readers accept for a local absolute path (no URI decoding happens).

    Hadoop still treats ``{}[]?*\\`` as glob syntax: read with ``__globPaths__`` off
    (and ``recursiveFileLookup`` on, without which Spark then reads some files several
    times), as ``read.py`` does.
    """
    return f"file://{path}"


def log_path(relative: str) -> str:
    """How delta-spark writes a relative file path into the log (java.net.URI encoding)."""
    return spark_file_uri(relative)[len("file:") :]


def local_path(location: str) -> str:
    """The local path of a location Spark reports (``file:/a%20b`` URI or a plain path)."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return _normalize(unquote(parsed.path))
    if parsed.scheme:
        raise NotImplementedError(f"location {location!r} is on another file system; only local tables are supported")
    return _normalize(location)
