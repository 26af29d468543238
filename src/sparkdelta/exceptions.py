"""sparkdelta's errors, in delta-spark's names and hierarchy: the one module to import them from.

``except AnalysisException`` (``pyspark.errors``) catches sparkdelta's analysis errors as it
catches delta-spark's, and each error carries delta-spark's error class: ``getCondition()``
answers it and the message starts with it (``[DELTA_MISSING_DELTA_TABLE] ...``).

- ``DeltaAnalysisException`` (and its ``DeltaParseException``), ``DeltaIllegalArgumentException``,
  ``DeltaArithmeticException``,
  ``DeltaUnsupportedOperationException``, ``DeltaRuntimeException`` (and its
  ``DeltaTableFeatureException``), ``DeltaInvariantViolationException``: delta-spark's
  Scala classes, as pyspark exceptions. Each is a ``DeltaError`` too.
- The concurrency family (``ConcurrentAppendException``...) is the kernel's own, under
  delta-spark's Python names (``delta.exceptions``); ``DeltaConcurrentModificationException``
  is their base.
- The kernel's errors (``TableNotFoundError``...) are re-exported. Where delta-spark raises a
  Spark exception for the same failure, the Spark surfaces (``DeltaTable`` and its builders,
  ``format("delta")`` reads and writes, named tables, SQL) raise the kernel error as that
  Spark class too (``spark_errors``): a ``TableNotFoundError`` that is also a
  ``DeltaAnalysisException``, caught by either name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from pyspark.errors import (
    AnalysisException,
    ArithmeticException,
    IllegalArgumentException,
    ParseException,
    PySparkException,
    UnsupportedOperationException,
)

from .kernel.errors import (
    ChangeDataFeedError,
    CloneTargetExistsError,
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    ConcurrentWriteException,
    DeletionVectorError,
    DeltaError,
    InvalidLogError,
    InvalidTableOperationError,
    InvalidTablePropertyError,
    MetadataChangedException,
    PathOutsideTableError,
    PostCommitHookError,
    ProtocolChangedException,
    RestoreFilesMissingError,
    StorageError,
    TableNotFoundError,
    UnsupportedFeatureError,
    UnsupportedModeError,
    VacuumRetentionError,
    VersionNotFoundError,
)

__all__ = [
    "ChangeDataFeedError",
    "CloneTargetExistsError",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentModificationException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "DeletionVectorError",
    "DeltaAnalysisException",
    "DeltaArithmeticException",
    "DeltaConcurrentModificationException",
    "DeltaError",
    "DeltaIllegalArgumentException",
    "DeltaInvariantViolationException",
    "DeltaParseException",
    "DeltaRuntimeException",
    "DeltaSparkSettingWarning",
    "DeltaTableFeatureException",
    "DeltaThrowable",
    "DeltaUnsupportedOperationException",
    "InvalidLogError",
    "InvalidTableOperationError",
    "InvalidTablePropertyError",
    "MetadataChangedException",
    "PathOutsideTableError",
    "PostCommitHookError",
    "ProtocolChangedException",
    "RestoreFilesMissingError",
    "StorageError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "UnsupportedModeError",
    "VacuumRetentionError",
    "VersionNotFoundError",
]

# delta-spark's Python name (``delta.exceptions``) for the base of the commit conflicts.
DeltaConcurrentModificationException = ConcurrentModificationException


class DeltaThrowable(PySparkException, DeltaError):
    """Base of sparkdelta's Spark-side errors (delta-spark's ``DeltaThrowable``): a pyspark
    exception with delta-spark's error class, and a ``DeltaError``."""

    def __init__(self, message: str, errorClass: str | None = None, messageParameters: dict[str, str] | None = None) -> None:
        PySparkException.__init__(self, message=message, errorClass=errorClass, messageParameters=messageParameters)
        self.error_class = errorClass

    def getMessage(self) -> str:
        """The message, led by the error class when there is one (pyspark writes ``[None]`` without)."""
        condition = self.getCondition()
        return f"[{condition}] {self._message}" if condition else self._message


class DeltaAnalysisException(AnalysisException, DeltaThrowable, ValueError):
    """A statement or write that does not fit the table: schema, partitioning, names, mode.

    Also a ``ValueError``, as sparkdelta's invalid-input errors were before they were
    AnalysisExceptions, so code catching ``ValueError`` keeps working.
    """


class DeltaParseException(ParseException, DeltaAnalysisException):
    """A statement that Spark's or Delta's grammar refuses before it reaches a table (Spark's
    ``ParseException``, which delta-spark's parser raises), e.g. a rename through Hive-style
    ``CHANGE COLUMN``. Caught as ``ParseException`` and as ``DeltaAnalysisException`` alike."""


class DeltaIllegalArgumentException(IllegalArgumentException, DeltaThrowable, ValueError):
    """An argument Delta refuses (delta-spark's ``DeltaIllegalArgumentException``); a ``ValueError`` too."""


class DeltaUnsupportedOperationException(UnsupportedOperationException, DeltaThrowable):
    """An operation Delta cannot perform as asked (delta-spark's name)."""


class UncertainCast(Exception):
    """Internal: a literal whose cast Spark may compute differently from sparkdelta's Python (or
    fail); the expression code then answers "unknown" (no skipping), never reaches a user."""


class DeltaArithmeticException(ArithmeticException, DeltaThrowable, ArithmeticError):
    """A value out of its type's range while writing (delta-spark's name): identity values
    generated past BIGINT's range. An ``ArithmeticError`` too."""


class DeltaRuntimeException(DeltaThrowable):
    """A failure while running a command, not in its analysis (delta-spark's name)."""


class DeltaTableFeatureException(DeltaRuntimeException):
    """A table feature in the way of the operation (delta-spark's name)."""


class DeltaSparkSettingWarning(UserWarning):
    """A delta-spark JVM setting (extension or catalog class) that sparkdelta dropped: its class is not installed."""


class DeltaInvariantViolationException(DeltaThrowable):
    """A row broke a NOT NULL, invariant, CHECK or generated-column constraint (delta-spark's name)."""


# The Spark class a kernel error takes at the Spark surface: the class delta-spark raises for
# the same failure. An error class that delta-spark raises as another class overrides it.
_SPARK_CLASS: dict[type[DeltaError], type[DeltaThrowable]] = {
    TableNotFoundError: DeltaAnalysisException,
    VersionNotFoundError: DeltaAnalysisException,
    InvalidTableOperationError: DeltaAnalysisException,
    InvalidTablePropertyError: DeltaAnalysisException,
    ChangeDataFeedError: DeltaAnalysisException,
    CloneTargetExistsError: DeltaAnalysisException,
    # delta-spark: DeltaUnsupportedTableFeatureException, a runtime error, not an analysis one.
    UnsupportedFeatureError: DeltaTableFeatureException,
    VacuumRetentionError: DeltaIllegalArgumentException,
    RestoreFilesMissingError: DeltaIllegalArgumentException,
    UnsupportedModeError: DeltaIllegalArgumentException,
    PostCommitHookError: DeltaRuntimeException,
}
_SPARK_CLASS_OF_ERROR_CLASS: dict[str, type[DeltaThrowable]] = {
    "DELTA_CANNOT_MODIFY_APPEND_ONLY": DeltaUnsupportedOperationException,
    # delta-spark: DeltaCommandUnsupportedWithDeletionVectorsException, DeltaColumnMappingUnsupportedException.
    "DELTA_UNSUPPORTED_GENERATE_WITH_DELETION_VECTORS": DeltaUnsupportedOperationException,
    "DELTA_UNSUPPORTED_MANIFEST_GENERATION_WITH_COLUMN_MAPPING": DeltaUnsupportedOperationException,
    # delta-spark: DeltaTablePropertyValidationFailedException, a RuntimeException.
    **{
        f"DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED.{sub}": DeltaRuntimeException
        for sub in (
            "PERSISTENT_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION",
            "EXISTING_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION",
        )
    },
}


_COMBINED: dict[tuple[type[DeltaError], type[DeltaThrowable]], type[DeltaThrowable]] = {}


def _combined(kernel: type[DeltaError], spark: type[DeltaThrowable]) -> type[DeltaThrowable]:
    """``kernel`` that is ``spark`` too, under the kernel's name: caught as either (one class per pair)."""
    key = (kernel, spark)
    if key not in _COMBINED:
        _COMBINED[key] = type(kernel.__name__, (spark, kernel), {"__module__": __name__, "__doc__": kernel.__doc__})
    return _COMBINED[key]


def to_spark(error: DeltaError) -> DeltaError:
    """``error`` as the Spark class delta-spark raises for it, or ``error`` itself when it has
    none (log damage, storage, commit conflicts) or already is one."""
    if isinstance(error, PySparkException):
        return error
    spark = _SPARK_CLASS_OF_ERROR_CLASS.get(error.error_class or "") or next(
        (cls for kind, cls in _SPARK_CLASS.items() if isinstance(error, kind)), None
    )
    if spark is None:
        return error
    translated = _combined(type(error), spark)(str(error), errorClass=error.error_class)
    translated.__dict__.update({k: v for k, v in error.__dict__.items() if k != "error_class"})
    return translated


F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T", bound=type)


def spark_errors(function: F) -> F:
    """``function`` raising kernel errors as their Spark classes (``to_spark``): the one
    translation, applied where a Spark user calls in."""

    @functools.wraps(function)
    def translating(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except DeltaError as error:
            translated = to_spark(error)
            if translated is error:
                raise
            raise translated.with_traceback(error.__traceback__) from error.__cause__

    return cast(F, translating)


def spark_surface(cls: T) -> T:
    """``cls`` with ``spark_errors`` on every public method: a class users call (``DeltaTable``, builders)."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, classmethod):
            setattr(cls, name, classmethod(spark_errors(member.__func__)))
        elif isinstance(member, staticmethod):
            setattr(cls, name, staticmethod(spark_errors(member.__func__)))
        elif callable(member):
            setattr(cls, name, spark_errors(member))
    return cls
