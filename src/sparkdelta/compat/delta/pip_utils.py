"""delta-spark's ``configure_spark_with_delta_pip``, which here fetches no jar."""

from __future__ import annotations

from pyspark.sql import SparkSession

from sparkdelta.spark.session import configure


def configure_spark_with_delta_pip(
    spark_session_builder: SparkSession.Builder, extra_packages: list[str] | None = None
) -> SparkSession.Builder:
    """Configure ``spark_session_builder`` for Delta, as delta-spark's function does.

    delta-spark adds its own jar to ``spark.jars.packages``; sparkdelta needs none, so only
    ``extra_packages`` go there. The type check and its message are delta-spark's.
    """
    if type(spark_session_builder) is not SparkSession.Builder:
        raise TypeError(
            "\nThis function must be called with a SparkSession builder as the argument.\n"
            f"The argument found is of type {type(spark_session_builder)}.\n"
            "See the online documentation for the correct usage of this function.\n"
        )
    builder = configure(spark_session_builder)
    if extra_packages:
        builder = builder.config("spark.jars.packages", ",".join(extra_packages))
    return builder
