"""Name the Spark jobs a Delta command runs, on classic and Spark Connect sessions alike.

A job description (``SparkContext.setJobDescription``) exists only in a classic session.
Operation tags (``SparkSession.addTag``) exist in both, show on each job in Spark's UI,
and let a user cancel a command's jobs with ``spark.interruptTag``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from pyspark.sql import SparkSession

_NOT_IN_TAG = re.compile(r"[,\s]+")  # Spark refuses commas in a tag; spaces read badly in the UI


def job_tag(description: str) -> str:
    """``description`` as a tag Spark accepts."""
    return _NOT_IN_TAG.sub("_", description.strip()) or "sparkdelta"


@contextlib.contextmanager
def tagged(spark: SparkSession, description: str) -> Iterator[str]:
    """Tag the jobs this thread starts in ``spark`` within the block; yields the tag."""
    tag = job_tag(description)
    spark.addTag(tag)
    try:
        yield tag
    finally:
        spark.removeTag(tag)
