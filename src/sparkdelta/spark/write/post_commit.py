"""Work that runs after a write commits, as delta-spark's ``PostCommitHook`` (auto compaction is one).

The session registers the hooks (``hooks.install``) and the write path runs them without
knowing what they are, so writing never imports the commands that themselves write. A
hook's failure is logged, never turning the committed write into an error.

Symlink manifests (``delta.compatibility.symlinkFormatManifest.enabled``) are not one of
these: kernel commands (RESTORE, the CLI) commit without Spark and must update them too,
and delta-spark raises their failure, so the kernel's transaction runs them
(``kernel/manifest.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyspark.sql import SparkSession

from ...kernel import AddFile, Table

log = logging.getLogger(__name__)

PostCommitHook = Callable[[SparkSession, Table, list[AddFile]], None]
_HOOKS: dict[str, PostCommitHook] = {}


def register_post_commit_hook(name: str, hook: PostCommitHook) -> None:
    """Run ``hook`` after every committed write (a second registration under ``name`` replaces it)."""
    _HOOKS[name] = hook


def run_post_commit_hooks(spark: SparkSession, table: Table, written: list[AddFile], version: int, where: str) -> None:
    """Each registered hook, on the files the commit at ``version`` added."""
    for name, hook in _HOOKS.items():
        try:
            hook(spark, table, written)
        except Exception as exc:
            log.warning("%s: %s after version %d failed; the write is committed: %s", where, name, version, exc)
