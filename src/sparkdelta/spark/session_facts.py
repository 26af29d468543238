"""What sparkdelta asks of a session, asked the same way of a classic and a Spark Connect one.

Nothing here reaches the driver's JVM (``sparkContext``, ``_jsparkSession``): a Connect
client has none, and the DataFrame, SQL and catalog calls used instead answer alike on
both kinds of session.
"""

from __future__ import annotations

import inspect
import re

from pyspark.sql import DataFrame, SparkSession

_SPLITS = re.compile(r"\bsplits=(\d+)")


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
