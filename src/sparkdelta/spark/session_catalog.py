"""Where a sparkdelta session keeps its embedded Hive metastore, whatever the working directory.

Spark's defaults put ``metastore_db``, ``derby.log`` and ``spark-warehouse`` in the working
directory: named tables then depend on where a job was started. A new session configured by
sparkdelta keeps them under one home (``$SPARKDELTA_HOME``, else ``~/.sparkdelta``) unless the
user chose a warehouse or a metastore, so every job on the machine sees the same tables.

Embedded Derby serves one process at a time. A second Spark process on the same metastore
fails deep in Hive with ``XSDB6`` and thousands of log lines; ``check_metastore_free``
finds the lock first and names the ways out.

Sessions built as *Delta Lake: Up & Running* shows name delta-spark's extension and
catalog classes, which a sparkdelta classpath lacks: they are dropped with a warning.
"""

from __future__ import annotations

import fcntl
import os
import struct
import warnings
from pathlib import Path

from pyspark.sql import SparkSession

from ..exceptions import DeltaAnalysisException, DeltaSparkSettingWarning
from .pyspark_classes import is_connect

JDO_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
WAREHOUSE = "spark.sql.warehouse.dir"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_DERBY_URL_PREFIX = "jdbc:derby:;databaseName="

# delta-spark's JVM settings (Delta Lake: Up & Running's session setup). Their classes are
# not on a sparkdelta classpath: Spark ignores the extension with a log line, and a
# session catalog it cannot load fails every catalog call (CANNOT_LOAD_CATALOG).
DELTA_SPARK_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_SPARK_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
EXTENSIONS = "spark.sql.extensions"
SESSION_CATALOG = "spark.sql.catalog.spark_catalog"


def dropped_setting_warning(key: str, value: str) -> None:
    warnings.warn(
        f"sparkdelta ignores {key}={value}: that is delta-spark's JVM class, which sparkdelta does not use "
        "(Delta works without it); remove the setting to silence this warning",
        DeltaSparkSettingWarning,
        stacklevel=3,
    )


def metastore_configs(options: dict[str, str], home: Path) -> dict[str, str]:
    """The settings that put the metastore (and, unless set, the warehouse) under ``home``."""
    if JDO_URL in options:
        return {}
    configs = {JDO_URL: f"{_DERBY_URL_PREFIX}{home / 'metastore_db'};create=true"}
    if WAREHOUSE not in options:
        configs[WAREHOUSE] = str(home / "spark-warehouse")
    # derby.log goes to Derby's home; other driver options the user gave are kept.
    derby_home = f"-Dderby.system.home={home}"
    user_options = options.get(DRIVER_JAVA_OPTIONS, "")
    configs[DRIVER_JAVA_OPTIONS] = f"{user_options} {derby_home}".strip()
    home.mkdir(parents=True, exist_ok=True)
    return configs


def derby_database(jdo_url: str | None) -> Path | None:
    """The directory of an embedded Derby metastore named by a JDO connection URL (Hive's default without one)."""
    if not jdo_url:
        return Path.cwd() / "metastore_db"
    if not jdo_url.startswith(_DERBY_URL_PREFIX):
        return None
    name = jdo_url[len(_DERBY_URL_PREFIX) :].split(";")[0]
    return Path(name) if os.path.isabs(name) else Path.cwd() / name


def lock_holder(database: Path) -> int | None:
    """The id of the process whose Derby has ``database`` open, or None if none has.

    Derby holds an exclusive ``fcntl`` lock on ``dbex.lck`` while a database is booted;
    ``F_GETLK`` reports the holder without taking the lock.
    """
    lock_file = database / "dbex.lck"
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except OSError:
        return None
    try:
        # struct flock on Linux: l_type, l_whence (short); l_start, l_len (off_t); l_pid (pid_t).
        query = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    except OSError:
        return None
    finally:
        os.close(fd)
    kind, _, _, _, pid = struct.unpack("hhqqi", answer)
    return None if kind == fcntl.F_UNLCK else pid


def _parent(pid: int) -> int | None:
    """The parent of process ``pid`` (Linux's ``/proc``), or None where that cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # "pid (name) state ppid ..."


def _is_own_driver(pid: int) -> bool:
    """Whether process ``pid`` is this session's driver JVM: the one this Python process launched
    (pyspark's gateway, a child of this process), or the one that launched this process
    (``spark-submit``, its parent). Told from the process tree, not by asking the JVM its pid,
    which needs py4j. Where the tree cannot be read, the holder counts as our own: the
    check then leaves the failure to Hive rather than refuse a session that may be fine."""
    parent = _parent(pid)
    return pid == os.getppid() or parent is None or parent == os.getpid()


def check_metastore_free(spark: SparkSession) -> None:
    """Refuse, with the fixes, a Hive metastore whose embedded Derby another process holds open.

    Checked before sparkdelta's first catalog call in a session; the session's own driver
    holding the lock (Spark reached the catalog first) is no conflict. A Spark Connect
    session has no local metastore: its server owns the catalog.
    """
    if is_connect(spark) or spark.conf.get("spark.sql.catalogImplementation", "in-memory") != "hive":
        return
    database = derby_database(spark.conf.get(JDO_URL, None))
    holder = lock_holder(database) if database is not None else None
    if holder is None or _is_own_driver(holder):
        return
    raise DeltaAnalysisException(
        f"the Hive metastore at {database} is in use by another Spark process (pid {holder}); its embedded Derby "
        "database serves one process at a time. Stop that process, or give this session a metastore of its own: "
        "set SPARKDELTA_HOME to another directory before the session starts, or set "
        f"{JDO_URL}=jdbc:derby:;databaseName=<dir>;create=true, or share a metastore service "
        "(spark.hadoop.hive.metastore.uris), or use spark.sql.catalogImplementation=in-memory"
    )


def _session_catalog_loads(spark: SparkSession) -> bool:
    """Whether Spark can load the session catalog ``spark.sql.catalog.spark_catalog`` names.

    Naming the current catalog loads it (without reaching the metastore); a class missing
    from the classpath fails there with CANNOT_LOAD_CATALOG.PLUGIN_CLASS_NOT_FOUND. Spark
    raises that as a ``SparkException`` that classic pyspark leaves unconverted, so the
    error is told by its message.
    """
    try:
        spark.catalog.currentCatalog()
    except Exception as error:
        if "PLUGIN_CLASS_NOT_FOUND" in str(error) and DELTA_SPARK_CATALOG in str(error):
            return False
        raise
    return True


def release_delta_spark_catalog(spark: SparkSession) -> None:
    """Unset delta-spark's session catalog in a session built with it, when its class is missing.

    Left in place, the setting fails every table lookup with CANNOT_LOAD_CATALOG and the
    session cannot be used at all; Spark then falls back to its built-in catalog, which is
    what sparkdelta registers Delta tables in. A Spark Connect server's catalog is its own
    business: the client leaves it as the server has it.
    """
    if is_connect(spark) or spark.conf.get(SESSION_CATALOG, None) != DELTA_SPARK_CATALOG:
        return
    if _session_catalog_loads(spark):
        return  # delta-spark itself is on the classpath: its catalog is the user's choice
    spark.conf.unset(SESSION_CATALOG)
    dropped_setting_warning(SESSION_CATALOG, DELTA_SPARK_CATALOG)
