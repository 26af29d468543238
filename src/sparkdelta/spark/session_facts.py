"""What sparkdelta asks of a session, asked the same way of a classic and a Spark Connect one.

Nothing here reaches the driver's JVM (``sparkContext``, ``_jsparkSession``): a Connect
client has none, and the DataFrame, SQL and catalog calls used instead answer alike on
both kinds of session.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession

_SPLITS = re.compile(r"\bsplits=(\d+)")


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client (its catalog and settings are the server's)."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # without the Connect client's packages there is no Connect session either
        return False
    return isinstance(spark, ConnectSession)


def spark_sql(spark: SparkSession, query: str) -> DataFrame:
    """``spark.sql`` as Spark answers it, past sparkdelta's own wrapper (``hooks.py``).

    The catalog's questions (``SHOW TABLE EXTENDED``, ``CREATE TABLE``) are Spark's to
    answer: sparkdelta's wrapper would serve some of them for Delta tables, and asks the
    catalog itself to decide which.
    """
    return inspect.unwrap(type(spark).sql)(spark, query)


def default_parallelism(spark: SparkSession) -> int:
    """How many tasks Spark spreads a scan of generated rows over: ``SparkContext.defaultParallelism``
    (the cluster's cores), unless ``spark.sql.leafNodeDefaultParallelism`` says otherwise.

    Spark plans ``range(n)`` into that many splits, and ``EXPLAIN`` shows the count without
    running a job.
    """
    plan = str(spark_sql(spark, "EXPLAIN SELECT id FROM range(1048576)").first()[0])  # type: ignore[index]
    found = _SPLITS.search(plan)
    if found is None:
        raise RuntimeError(f"sparkdelta: no splits in Spark's plan of range(): {plan}")
    return max(1, int(found.group(1)))


@contextmanager
def job_tag(spark: SparkSession, tag: str) -> Iterator[None]:
    """Tag the Spark jobs this thread runs inside the block, with the session's ``addTag``.

    A job description (``SparkContext.setJobDescription``) is a local property of the
    driver, which a Connect client cannot set; tags are what both kinds of session offer to
    mark jobs (``spark.job.tags`` in the event log, ``interruptTag``)."""
    spark.addTag(tag)
    try:
        yield
    finally:
        spark.removeTag(tag)
