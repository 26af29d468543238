"""The spec's rules for the file paths the log holds, applied column-wise.

PROTOCOL.md ("Add File and Remove File"): a ``path`` is "a relative path to a data file
from the root of the table or an absolute path", "a URI as specified by RFC 2396, which
needs to be decoded to get the data file path". Writers escape differently (delta-spark
keeps ``=``, ``+``, ``,`` and ``é`` as java.net.URI does; delta-rs's ``url`` crate escapes
``é``; others escape everything), and spell local absolute paths ``/p``, ``file:/p``,
``file:///p`` or ``file://localhost/p``. So a file's identity is its *decoded* path:
relative to the root when it lies inside it, absolute otherwise.

A relative path names a file in the root or one of its subdirectories ("Data Files"); a
``..`` segment, or a decoded form that is absolute (``%2F...``), names none, so such
paths are refused rather than followed out of the table.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, cast
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import PathOutsideTableError

CHANGE_DATA_DIR = "_change_data"
"""The folder of the change feed's ``cdc`` files ("Change Data Files"), beside the data."""
STAGING_DIR = "_delta_staging"
"""The folder a write's files wait in until they are moved into place and committed; what
a killed write leaves there, VACUUM collects once it is older than the retention window."""

_SCHEME = r"^[A-Za-z][A-Za-z0-9+.-]*:"
# file: URIs of the local file system: no authority, an empty one, or localhost.
_LOCAL_FILE_URI = r"^file:(/$|/[^/]|//(localhost)?/)"
_LOCAL_FILE_PREFIX = r"^file:(//(localhost)?)?"
# A file: URI with a relative path (file:a/b) resolves against the working directory.
_OPAQUE_FILE_URI = r"^file:[^/]"
_PARENT_SEGMENT = r"(^|/)\.\.(/|$)"
_DOT_SEGMENT = r"(^|/)\.\.?(/|$)"
# What ``normalize_relative`` changes: an empty segment (``//``, a trailing ``/``) or a ``.`` one.
_UNNORMALIZED_RELATIVE = r"//|/$|(^|/)\.(/|$)"


def percent_decode(paths: pa.Array[Any]) -> pa.Array[Any]:
    """RFC 2396 decoding (UTF-8) of every string in ``paths``.

    Arrow has no such kernel, so Python decodes, but once per distinct directory (a
    partition's thousands of files share it) and per file name that holds an escape.
    """
    escaped = pc.match_substring(paths, "%")
    if not pc.any(escaped).as_py():
        return paths
    # A leading '/' gives every path a directory part, possibly empty. (The stubs refuse
    # Python strings among ``binary_join_element_wise``'s values; Arrow takes them as scalars.)
    parts = pc.split_pattern(
        pc.binary_join_element_wise("/", paths.filter(escaped), ""),  # type: ignore[call-overload]
        "/",
        max_splits=1,
        reverse=True,
    )
    directories = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(pc.list_element(parts, 0)))
    decoded_directories = pa.array([unquote(d) for d in cast(list[str], directories.dictionary.to_pylist())], pa.string())
    names = pc.list_element(parts, 1)
    names_escaped = pc.match_substring(names, "%")
    if pc.any(names_escaped).as_py():
        decoded = pa.array([unquote(n) for n in cast(list[str], names.filter(names_escaped).to_pylist())], pa.string())
        names = pc.replace_with_mask(names, names_escaped, decoded)
    joined = pc.binary_join_element_wise(decoded_directories.take(directories.indices), names, "/")  # type: ignore[call-overload]
    return cast("pa.Array[Any]", pc.replace_with_mask(paths, escaped, pc.utf8_slice_codeunits(joined, 1)))


def normalize_relative(decoded: str) -> str:
    """A decoded relative path as readers resolve it: empty and ``.`` segments dropped
    (``a//./f/`` is ``a/f``), as Hadoop's ``Path`` and ``posixpath.normpath`` do.

    Readers (``file_path``) and the log's file keys (``canonical_paths``) both use it, so a
    file has one key however the log spells it, and VACUUM never deletes what a read uses.
    ``..`` segments are kept, not resolved: such a path is refused, whatever precedes them.
    """
    segments = [s for s in decoded.split("/") if s not in ("", ".")]
    return ("/" if decoded.startswith("/") else "") + "/".join(segments)


_SCAN_CHUNK = 1 << 18


def _may_contain(paths: pa.Array[Any], needles: tuple[bytes, ...]) -> bool:
    """Whether a value of ``paths`` may hold one of ``needles`` (a match across two adjacent
    values is a false positive, so callers check the candidates precisely).

    Vectorised over the values' bytes in place, far cheaper than a per-string
    ``match_substring``; ``needles`` are one or two bytes long. The bytes are scanned in
    chunks (overlapping by one byte), so the comparisons' masks stay small: whole-column
    masks of 100,000 paths would take 9 MB each.
    """
    _, offset_buffer, data = paths.buffers()
    if data is None or len(paths) == 0:
        return False
    width = np.int64 if pa.types.is_large_string(paths.type) else np.int32
    # The stubs do not declare that Arrow buffers export the buffer protocol.
    offsets = np.frombuffer(offset_buffer, width)[paths.offset : paths.offset + len(paths) + 1]  # type: ignore[call-overload]
    raw = np.frombuffer(data, np.uint8)[int(offsets[0]) : int(offsets[-1])]  # type: ignore[call-overload]  # no copy
    for start in range(0, len(raw), _SCAN_CHUNK):
        chunk = raw[start : start + _SCAN_CHUNK + 1]
        for needle in needles:
            first = chunk == needle[0]
            if len(needle) == 1 and first.any():
                return True
            if len(needle) == 2 and (first[:-1] & (chunk[1:] == needle[1])).any():
                return True
    return False


def _normalize_relative_keys(keys: pa.Array[Any], relative: pa.Array[Any] | None) -> pa.Array[Any]:
    """``normalize_relative`` applied to the ``relative`` entries of decoded ``keys`` (all when None).

    The usual log holds no ``//``, ``/.`` or leading ``.``, so a byte scan settles it;
    only the paths that do need normalizing are handed to Python.
    """
    if not (
        _may_contain(keys, (b"//", b"/.")) or pc.any(pc.starts_with(keys, ".")).as_py() or pc.any(pc.ends_with(keys, "/")).as_py()
    ):
        return keys
    needs = pc.match_substring_regex(keys, _UNNORMALIZED_RELATIVE)
    if relative is not None:
        needs = pc.and_(needs, relative)
    if not pc.any(needs).as_py():
        return keys
    normalized = pa.array([normalize_relative(k) for k in cast(list[str], keys.filter(needs).to_pylist())], pa.string())
    return cast("pa.Array[Any]", pc.replace_with_mask(keys, needs, normalized))


def _normalize_absolute(paths: pa.Array[Any]) -> pa.Array[Any]:
    """Repeated slashes collapsed, ``.`` and ``..`` resolved lexically, as Hadoop's ``Path`` does."""
    doubled = pc.match_substring(paths, "//")
    collapsed = pc.replace_substring_regex(paths, "/{2,}", "/") if pc.any(doubled).as_py() else paths
    dotted = pc.match_substring_regex(collapsed, _DOT_SEGMENT)
    if not pc.any(dotted).as_py():
        return collapsed
    resolved = pa.array([posixpath.normpath(p) for p in cast(list[str], collapsed.filter(dotted).to_pylist())], pa.string())
    return cast("pa.Array[Any]", pc.replace_with_mask(collapsed, dotted, resolved))


def is_relative(paths: pa.Array[Any]) -> pa.Array[Any]:
    """Which paths are relative references: no scheme and no leading ``/``."""
    return cast("pa.Array[Any]", pc.invert(pc.or_(pc.starts_with(paths, "/"), pc.match_substring_regex(paths, _SCHEME))))


def _relative_to(absolute: pa.Array[Any], table_root: str) -> pa.Array[Any]:
    """Absolute paths inside ``table_root`` made relative to it; the others kept."""
    prefix = table_root.rstrip("/") + "/"
    inside = pc.starts_with(absolute, prefix)
    return cast("pa.Array[Any]", pc.if_else(inside, pc.utf8_slice_codeunits(absolute, len(prefix)), absolute))


def canonical_paths(paths: pa.Array[Any], table_root: str) -> pa.Array[Any]:
    """One key per file, whatever the spelling: the decoded path, relative to ``table_root``
    when the file lies inside it, else absolute (``/p``, or a decoded URL).

    ``table_root`` is ``Table.root``: the decoded local path, or an object store's URL
    (``s3://bucket/t``). Object-store URLs are compared decoded, ``s3a://`` as ``s3://``
    (the same objects), so a file inside the root named by its URL is the relative one.
    """
    if len(paths) == 0:
        return paths
    if (
        not _may_contain(paths, (b":", b"%", b"//", b"/."))
        and not pc.any(pc.or_(pc.or_(pc.starts_with(paths, "/"), pc.starts_with(paths, ".")), pc.ends_with(paths, "/"))).as_py()
    ):
        return paths  # the usual log: plain, normalized relative paths, settled by one scan
    local_uri = pc.match_substring_regex(paths, _LOCAL_FILE_URI)
    absolute = pc.or_(local_uri, pc.starts_with(paths, "/"))
    other_scheme = pc.and_(pc.invert(absolute), pc.match_substring_regex(paths, _SCHEME))
    if not pc.any(pc.or_(pc.or_(absolute, other_scheme), pc.match_substring(paths, "%"))).as_py():
        return _normalize_relative_keys(paths, None)
    decoded = percent_decode(pc.if_else(local_uri, pc.replace_substring_regex(paths, _LOCAL_FILE_PREFIX, ""), paths))
    keys = pc.replace_with_mask(decoded, absolute, _relative_to(_normalize_absolute(decoded.filter(absolute)), table_root))
    keys = _normalize_relative_keys(keys, pc.invert(pc.or_(absolute, other_scheme)))
    if not pc.any(other_scheme).as_py():
        return keys
    urls = pc.replace_substring_regex(decoded.filter(other_scheme), r"^s3a://", "s3://")
    return cast("pa.Array[Any]", pc.replace_with_mask(keys, other_scheme, _relative_to(urls, table_root)))


def _leaves_root(decoded_relative: str) -> bool:
    return decoded_relative.startswith("/") or re.search(_PARENT_SEGMENT, decoded_relative) is not None


def file_path(table_root: str, path: str) -> str:
    """Where the file one log ``path`` names is: a decoded, normalized local path, or the
    URI as written for another scheme. A relative path leading out of the root is refused.
    """
    if re.match(_LOCAL_FILE_URI, path) or path.startswith("/"):
        return posixpath.normpath(re.sub("/{2,}", "/", unquote(re.sub(_LOCAL_FILE_PREFIX, "", path))))
    if re.match(_SCHEME, path) and not re.match(_OPAQUE_FILE_URI, path):
        return path
    decoded = unquote(path)
    if re.match(_OPAQUE_FILE_URI, path) or _leaves_root(decoded):
        raise PathOutsideTableError(
            f"{table_root}: the log names {path!r}, a relative path that leads outside the table root once decoded; "
            "refusing to read, rewrite or delete it"
        )
    authority = re.match(_SCHEME + "//[^/]*", table_root)  # an object store's "s3://bucket" stays whole
    prefix = authority.group(0) if authority else ""
    return prefix + re.sub("/{2,}", "/", f"{table_root[len(prefix) :]}/{normalize_relative(decoded)}")


def escaping_paths(paths: pa.Array[Any], keys: pa.Array[Any]) -> pa.Array[Any]:
    """Which ``paths`` (with their ``canonical_paths`` keys) lead out of the root though not absolute:
    relative ones that climb out or decode to an absolute path, and ``file:`` URIs with a relative path."""
    if len(paths) == 0:
        return pa.array([], pa.bool_())
    if not (
        _may_contain(keys, (b"..",))
        or pc.any(pc.starts_with(keys, "/")).as_py()
        or pc.any(pc.starts_with(paths, "file:")).as_py()
    ):
        return pa.nulls(len(paths), pa.bool_()).fill_null(False)  # the common case, settled by one scan
    leaves = pc.or_(pc.starts_with(keys, "/"), pc.match_substring_regex(keys, _PARENT_SEGMENT))
    return cast("pa.Array[Any]", pc.or_(pc.and_(is_relative(paths), leaves), pc.match_substring_regex(paths, _OPAQUE_FILE_URI)))


def refuse_escaping_paths(paths: pa.Array[Any], keys: pa.Array[Any], versions: pa.Array[Any], table_root: str) -> None:
    """Raise ``PathOutsideTableError`` naming the first ``paths`` entry that leaves the root, and its version."""
    escaping = escaping_paths(paths, keys)
    count = pc.sum(escaping).as_py() or 0
    if not count:
        return
    path, version = pc.filter(paths, escaping)[0].as_py(), pc.filter(versions, escaping)[0].as_py()
    others = f" (and {count - 1} more)" if count > 1 else ""
    raise PathOutsideTableError(
        f"{table_root}: version {version} adds {path!r}{others}, a relative path that leads outside the table root "
        "once decoded. The protocol's relative paths name files under the root; refusing to read, rewrite or delete it"
    )
