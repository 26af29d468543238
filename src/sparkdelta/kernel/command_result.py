"""What a Delta command returns, whoever runs it: the ``DeltaTable`` API, SQL or the CLI.

As delta-spark's commands do, each command reports its own commit and the
``operationMetrics`` it wrote there; callers shape them into their results (SQL's
``num_affected_rows``, the API's DataFrames, the CLI's report) and never read them back
from the log, where a concurrent writer's commit of the same operation may come first.
Commands with more to say (VACUUM's files, OPTIMIZE's summary) return a subclass.

Kernel code (no Spark), so the CLI and the kernel's own commands return it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only for annotations: the CLI's reads never load the transaction module
    from .transaction import CommitResult

Metric = int | float | str | bool
"""An operationMetrics value as a command computes it (the log stores its text)."""


@dataclass(frozen=True)
class CommandResult:
    """A command's commit (None when it committed nothing) and the operationMetrics it recorded there
    (delta-spark's names; empty when it committed nothing). ``skipped``: the command ran
    nothing, its app transaction (``txnAppId`` / ``txnVersion``) being in the table already;
    delta-spark then returns no result row at all, where a command that changed nothing
    reports zero rows affected."""

    commit: CommitResult | None
    metrics: Mapping[str, Metric]
    skipped: bool = field(default=False, kw_only=True)  # keyword-only: subclasses add fields without defaults

    @property
    def version(self) -> int | None:
        """The version the command committed, if any."""
        return self.commit.version if self.commit is not None else None

    def count(self, name: str) -> int:
        """The integer metric ``name``; 0 when the command did not record it (it committed nothing)."""
        return int(self.metrics.get(name, 0))


NOTHING_COMMITTED = CommandResult(None, {})
"""The result of a command that found nothing to change."""

ALREADY_COMMITTED = CommandResult(None, {}, skipped=True)
"""The result of an idempotent command whose app transaction the table already holds."""
