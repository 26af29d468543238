"""Computing a DataFrame once and keeping its rows, on classic and Spark Connect sessions alike.

``localCheckpoint(eager=True)`` runs the rows' query and keeps its output partitions:
what reads the result sees the same rows in the same partitions every time, which is
what a non-deterministic query or a numbering by partition (``monotonically_increasing_id``)
needs. Observations in the query (``DataFrame.observe``) are completed by that job.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from ..pyspark_classes import is_connect


def checkpointed(df: DataFrame) -> DataFrame:
    """``df`` computed now and kept (``localCheckpoint(eager=True)``), its observations completed."""
    kept = df.localCheckpoint(eager=True)
    if is_connect(df.sparkSession):
        _complete_observations(df)
    return kept


def _complete_observations(df: DataFrame) -> None:
    """Complete the ``Observation``\\ s in ``df``'s query from what its checkpoint reported.

    A classic session completes them itself. PySpark's Connect client (4.x) sends the
    checkpoint as a command without the plan's observations, so the metrics the server
    returns for them land only in ``df.executionInfo``, and the ``Observation`` objects
    stay empty (``get`` returns ``{}``). This reads the client's own plan (``_plan``,
    Python objects, no JVM), the only place that knows which objects wait for which name.
    """
    info = df.executionInfo
    pending = df._plan.observations
    if info is None or not pending:
        return
    for name, values in info.flows:
        observation = pending.get(name)
        if observation is not None and not observation._result:
            observation._result.update(values)
