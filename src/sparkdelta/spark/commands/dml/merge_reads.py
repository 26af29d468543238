"""What a MERGE's reads of its source saw: observed counts, and a fingerprint of the join keys.

An unmaterialized source is read once per Spark job, and nothing both kinds of session
share says whether its plan is deterministic (``rand()``, ``uuid()``, an input that
changes). A pruning decided on the keys of one read holds for another read only if that
one saw the same keys. ``KeyFingerprint`` tells: the rows, and the sum and the xor of
the keys' ``xxhash64``, aggregated in the pruning's jobs and observed (``Observation``)
in the job that then joins the source. Equal for reads of the same keys (in any order
or partitioning); for other keys, equal only by a collision of 64-bit hashes.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, Observation
from pyspark.sql import functions as F

_NAMES = ("rows", "hash_sum", "hash_xor")


def observed(observation: Observation) -> dict[str, int] | None:
    """The counts ``observation`` collected; None when Spark lost them.

    Adaptive execution replaces a plan above a shuffle that came out empty (a partitioned
    write's ``repartition``) by an empty relation, and an observation below that shuffle
    is then never reported (``Observation.get`` fails: the JVM's assertion in ``toPyRow``,
    through py4j, in a classic session; an empty result in a Connect one). That happens
    only when no row reached the write, so the caller knows the counts from that, or counts
    again (a job of its own in that case only).
    """
    try:
        found = observation.get
    except Exception:  # noqa: BLE001 - py4j's error wraps the JVM's; a recount follows, never a wrong count
        return None
    return {name: int(value) for name, value in found.items()} if found else None


def fingerprint_columns(keys: tuple[str, ...]) -> list[Column]:
    """Aggregates over the source (``keys``: SQL of its key columns) naming what a read saw of them.

    The sum is exact (a decimal: no overflow, no wrap-around), and it tells apart what the
    xor cannot (a key twice cancels out of a xor). Never NULL, so an empty read is (0, 0, 0).
    """
    digest = F.xxhash64(*[F.expr(sql) for sql in keys])
    return [
        F.count(F.lit(1)).alias("rows"),
        F.coalesce(F.sum(digest.cast("decimal(20,0)")), F.lit(0).cast("decimal(30,0)")).alias("hash_sum"),
        F.coalesce(F.bit_xor(digest), F.lit(0).cast("long")).alias("hash_xor"),
    ]


@dataclass(frozen=True)
class KeyFingerprint:
    """The keys (SQL over the source) a pruning read and what that read saw of them (``fingerprint_columns``)."""

    keys: tuple[str, ...]
    seen: tuple[int, int, int]

    @staticmethod
    def of(keys: tuple[str, ...], values: dict[str, int]) -> KeyFingerprint:
        """From the values of ``fingerprint_columns(keys)``, by name."""
        rows, hash_sum, hash_xor = (int(values[name]) for name in _NAMES)
        return KeyFingerprint(keys, (rows, hash_sum, hash_xor))

    def columns(self) -> list[Column]:
        """The aggregates another read observes to compare with this one."""
        return fingerprint_columns(self.keys)

    def matches(self, values: dict[str, int] | None) -> bool:
        """Whether a read that observed ``values`` (None: lost) surely saw the same keys."""
        return values is not None and all(name in values for name in _NAMES) and KeyFingerprint.of(self.keys, values) == self
