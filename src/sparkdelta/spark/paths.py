"""Between the log's file paths and the strings Spark's file sources use.

The log holds RFC 2396-encoded paths, usually relative to the table root. Spark's
readers take Hadoop path strings (decoded), and report ``_metadata.file_path`` as the
``java.net.URI`` form of that path, so joining scan rows back to their log entry needs
exactly that spelling.
"""

from __future__ import annotations

from urllib.parse import unquote, urlparse

# java.net.URI leaves these unescaped in a path (unreserved, punct, '/', '@');
# other ASCII characters are percent-encoded, non-ASCII characters are kept.
_URI_PATH_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-!.~'()*,;:$&+=/@")


def absolute_path(table_root: str, log_path: str) -> str:
    """The decoded absolute path of a file named in the log."""
    parsed = urlparse(log_path)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme:
        raise NotImplementedError(f"file {log_path!r} is on another file system; only local tables are supported")
    decoded = unquote(log_path)
    return decoded if decoded.startswith("/") else f"{table_root}/{decoded}"


def spark_file_uri(path: str) -> str:
    """``new org.apache.hadoop.fs.Path(path).toUri().toString()`` for a local absolute path."""
    encoded = "".join(c if c in _URI_PATH_SAFE or ord(c) > 127 else "".join(f"%{b:02X}" for b in c.encode()) for c in path)
    return f"file:{encoded}"


def hadoop_path(path: str) -> str:
    """A string Spark's readers accept for a local absolute path (no URI decoding happens)."""
    return f"file://{path}"


def log_path(relative: str) -> str:
    """How delta-spark writes a relative file path into the log (java.net.URI encoding)."""
    return spark_file_uri(relative)[len("file:"):]
