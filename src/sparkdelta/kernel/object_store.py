"""Delta tables on S3, Google Cloud Storage and Azure Blob Storage, through ``obstore``.

``obstore`` wraps the Rust ``object_store`` crate that delta-rs uses, so a table is
reached with the same requests, the same configuration keys and the same environment
variables as delta-rs reaches it. Atomic commits rest on conditional creates:

- **S3**: ``PutObject`` with ``If-None-Match: *``; 412 means the version exists.
- **GCS**: upload with ``ifGenerationMatch=0``; 412 means it exists.
- **Azure**: ``Put Blob`` with ``If-None-Match: *``; 409 means it exists.

A store that does not honour them (it answers 501, or silently overwrites: a probe before
the first commit tells), and delta-rs's unsafe-rename and lock-table options, make commits
fail with a ``StorageError`` naming the ways out (``put_if_absent``).

URL spellings (decided here, relied on by ``Table.root``):

- ``s3a://`` is Hadoop's name for ``s3://``: the same objects. A table root is always
  spelled ``s3://`` (as delta-rs does), so that one table has one root whatever the
  user typed, and paths of either spelling reach the same keys. The Spark side maps the
  root back to ``s3a://`` for Hadoop with ``hadoop_url``.
- ``gs://bucket/...`` is Google's.
- Azure: ``az://container/...`` (account from the options), ``abfs[s]://container@account.dfs.core.windows.net/...``
  and ``wasb[s]://container@account.blob.core.windows.net/...`` all address the blob
  API of one container; the root keeps the user's spelling, since the host names the
  account.

Configuration, first match wins: the explicit ``storage_options`` (keys as delta-rs and
``object_store`` take them, any case: ``aws_access_key_id`` or ``AWS_ACCESS_KEY_ID``),
then the environment (``AWS_*``, ``AZURE_*``, ``GOOGLE_*``), read by ``object_store``
itself for credentials, region and endpoint, and here for the HTTP client settings
(``AWS_ALLOW_HTTP``...), which ``obstore`` takes apart from the rest. Hadoop-style
settings (``spark.hadoop.fs.s3a.*``) become options with ``storage_options_from_hadoop``.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import obstore
from obstore.exceptions import (
    AlreadyExistsError,
    BaseError,
    NotSupportedError,
    PermissionDeniedError,
    PreconditionError,
    UnauthenticatedError,
)
from obstore.store import AzureStore, GCSStore, S3Store

from .dynamodb_commits import CommitEntry, DynamoDbCommits, dynamodb_settings, temp_name
from .errors import StorageError
from .storage import FileStatus, Storage

log = logging.getLogger(__name__)

S3, GCS, AZURE = "s3", "gcs", "azure"
PROVIDERS = {
    "s3": S3,
    "s3a": S3,
    "gs": GCS,
    "az": AZURE,
    "azure": AZURE,
    "abfs": AZURE,
    "abfss": AZURE,
    "wasb": AZURE,
    "wasbs": AZURE,
}
"""URL scheme -> provider, for every scheme this module serves."""

_ENV_PREFIXES = {S3: "aws_", GCS: "google_", AZURE: "azure_"}
_PROVIDER_NAMES = {S3: "S3", GCS: "Google Cloud Storage", AZURE: "Azure Blob Storage"}

# ``obstore`` takes the HTTP client's settings (ClientConfig) apart from the store's.
_CLIENT_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "http1_only",
        "http2_only",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "randomize_addresses",
        "read_timeout",
        "timeout",
        "user_agent",
    }
)
# delta-rs's retry keys (its "advanced object storage configuration").
_RETRY_KEYS = frozenset(
    {"max_retries", "retry_timeout", "backoff_config.init_backoff", "backoff_config.max_backoff", "backoff_config.base"}
)
# Options that are no store settings: the DynamoDB commit table's (``dynamodb_commits``),
# read by ``dynamodb_settings`` and ``_commit_refusal``; delta-rs's own mount and
# concurrency settings; its old lock-table name, meaningless without a locking provider.
_IGNORED_KEYS = frozenset(
    {
        "aws_s3_allow_unsafe_rename",
        "aws_s3_locking_provider",
        "aws_endpoint_url_dynamodb",
        "aws_region_dynamodb",
        "aws_access_key_id_dynamodb",
        "aws_secret_access_key_dynamodb",
        "aws_session_token_dynamodb",
        "delta_dynamo_table_name",
        "delta_dynamo_table_path_scheme",
        "delta_dynamo_read_capacity",
        "delta_dynamo_write_capacity",
        "dynamo_lock_table_name",
        "mount_allow_unsafe_rename",
        "object_store_concurrency_limit",
    }
)
_COMMIT_OPTIONS_HELP = (
    "Delta commits need an atomic put-if-absent: use a store that honours conditional writes "
    "(AWS S3, GCS and Azure Blob Storage do), or coordinate commits through DynamoDB as "
    "delta-spark's S3DynamoDBLogStore (io.delta.storage.S3DynamoDBLogStore) does: "
    "aws_s3_locking_provider=dynamodb, with delta_dynamo_table_name (default delta_log)"
)

DEFAULT_RETRY: dict[str, Any] = {
    "max_retries": 6,
    "retry_timeout": timedelta(seconds=60),
    "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=5), "base": 2},
}
"""Throttling (503 SlowDown) and dropped connections get six retries over roughly ten
seconds; a wrong or unreachable endpoint is reported within seconds, not after
``object_store``'s default three minutes."""

_LIST_PAGE = 1000  # S3's page size; also the most keys one DeleteObjects takes
_DELETE_BATCH = 1000


@dataclass(frozen=True, slots=True)
class ObjectUrl:
    """Where a URL points: provider, bucket (container), Azure account, and object key."""

    provider: str
    bucket: str
    account: str | None
    key: str

    @property
    def store_id(self) -> tuple[str, str | None, str]:
        return self.provider, self.account, self.bucket


def parse_url(url: str) -> ObjectUrl:
    """Split an object-store URL. The key is kept as written (no percent-decoding): the
    kernel joins decoded names onto the root, as it does for local paths."""
    scheme, sep, rest = url.partition("://")
    provider = PROVIDERS.get(scheme.lower()) if sep else None
    if provider is None:
        raise ValueError(f"not an object store URL: {url!r} (schemes: {', '.join(sorted(PROVIDERS))})")
    authority, _, key = rest.partition("/")
    account = None
    if provider == AZURE and "@" in authority:
        authority, _, host = authority.partition("@")
        account = host.split(".", 1)[0] or None
    if not authority:
        raise ValueError(f"{url!r} names no bucket or container")
    return ObjectUrl(provider, authority, account, key.strip("/"))


def canonical_root(location: str) -> str:
    """The table root for ``location``: trailing slashes dropped, ``s3a://`` spelled ``s3://``."""
    scheme, _, rest = location.partition("://")
    scheme = scheme.lower()
    return f"{'s3' if scheme == 's3a' else scheme}://{rest.rstrip('/')}"


def hadoop_url(url: str, account_name: str | None = None) -> str:
    """``url`` as Hadoop's file systems name it (for the Spark data path): S3 through
    ``s3a://``; ``az://container/p`` as ``abfss://container@account.dfs.core.windows.net/p``."""
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme in ("s3", "s3a"):
        return f"s3a://{rest}"
    if scheme in ("az", "azure"):
        container, _, path = rest.partition("/")
        if not account_name:
            raise ValueError(f"{url!r}: Hadoop's ABFS driver needs the storage account; give azure_storage_account_name")
        return f"abfss://{container}@{account_name}.dfs.core.windows.net/{path}"
    return url


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class StoreSettings:
    """Options for one provider, split the way ``obstore`` takes them."""

    config: dict[str, str]
    client: dict[str, str]
    retry: dict[str, Any]


def _status(path: str, meta: Any) -> FileStatus:
    """A listed object; its ETag (or version) tells it apart from another written at the same key
    with the same size within the same second of ``Last-Modified``."""
    identity = meta.get("e_tag") or meta.get("version")
    return FileStatus(path, int(meta["size"]), int(meta["last_modified"].timestamp() * 1000), identity)


def _duration(key: str, value: str) -> timedelta:
    """``100ms``, ``30s``, ``5m``, ``1h`` or a plain number of seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", str(value))
    if match is None:
        raise ValueError(f"storage option {key}={value!r}: expected a duration such as '30s' or '100ms'")
    number, unit = float(match.group(1)), match.group(2) or "s"
    return timedelta(seconds=number * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit])


def _retry_config(options: Mapping[str, str]) -> dict[str, Any]:
    retry: dict[str, Any] = {**DEFAULT_RETRY, "backoff": dict(DEFAULT_RETRY["backoff"])}
    for key, value in options.items():
        if key == "max_retries":
            retry["max_retries"] = int(value)
        elif key == "retry_timeout":
            retry["retry_timeout"] = _duration(key, value)
        elif key == "backoff_config.base":
            retry["backoff"]["base"] = float(value)
        else:
            retry["backoff"][key.removeprefix("backoff_config.")] = _duration(key, value)
    return retry


def _client_key(provider: str, key: str) -> str | None:
    """The ClientConfig key ``key`` sets (``aws_allow_http`` and ``allow_http`` alike), if any."""
    bare = key.removeprefix(_ENV_PREFIXES[provider])
    return bare if bare in _CLIENT_KEYS else None


def store_settings(provider: str, options: Mapping[str, str] | None, environ: Mapping[str, str] | None = None) -> StoreSettings:
    """Explicit ``options`` first, then the environment.

    Store keys (credentials, region, endpoint...) go to ``obstore`` as given, lower-cased;
    ``object_store`` resolves their aliases and falls back to its own reading of the
    environment. Client keys are merged here, environment under options, because passing
    client options at all hides the environment's from ``object_store``.
    """
    environ = os.environ if environ is None else environ
    prefix = _ENV_PREFIXES[provider]
    client: dict[str, str] = {}
    for name, value in environ.items():
        lowered = name.lower()
        if lowered.startswith(prefix) and (key := _client_key(provider, lowered)):
            client[key] = value
    config: dict[str, str] = {}
    retry: dict[str, str] = {}
    for name, value in (options or {}).items():
        key = name.lower()
        if key in _IGNORED_KEYS:
            continue
        if key in _RETRY_KEYS:
            retry[key] = value
        elif client_key := _client_key(provider, key):
            client[client_key] = value
        else:
            config[key] = value
    return StoreSettings(config, client, _retry_config(retry))


def storage_options_from_hadoop(settings: Mapping[str, str], location: str | None = None) -> dict[str, str]:
    """Storage options from Hadoop-style settings: the hook for Spark's ``spark.hadoop.*``.

    The Spark side passes its session's Hadoop configuration (with or without the
    ``spark.hadoop.`` prefix), so the kernel reaches the table with the credentials Spark
    uses. ``location`` selects per-bucket S3A settings (``fs.s3a.bucket.<bucket>.*``) and the
    Azure account whose key applies. Settings with no ``object_store`` counterpart are
    left out.
    """
    hadoop = {k.removeprefix("spark.hadoop."): v for k, v in settings.items()}
    target = parse_url(location) if location is not None else None
    options: dict[str, str] = {}

    s3a = {
        k.removeprefix("fs.s3a."): v for k, v in hadoop.items() if k.startswith("fs.s3a.") and not k.startswith("fs.s3a.bucket.")
    }
    if target is not None and target.provider == S3:
        bucket_prefix = f"fs.s3a.bucket.{target.bucket}."
        s3a.update({k.removeprefix(bucket_prefix): v for k, v in hadoop.items() if k.startswith(bucket_prefix)})
    for hadoop_key, option in (
        ("access.key", "aws_access_key_id"),
        ("secret.key", "aws_secret_access_key"),
        ("session.token", "aws_session_token"),
        ("endpoint.region", "aws_region"),
    ):
        if hadoop_key in s3a:
            options[option] = s3a[hadoop_key]
    ssl = s3a.get("connection.ssl.enabled", "true").strip().lower() != "false"
    if endpoint := s3a.get("endpoint"):
        options["aws_endpoint_url"] = endpoint if "://" in endpoint else f"{'https' if ssl else 'http'}://{endpoint}"
    if not ssl or options.get("aws_endpoint_url", "").startswith("http://"):
        options["aws_allow_http"] = "true"
    if "path.style.access" in s3a:
        path_style = s3a["path.style.access"].strip().lower() == "true"
        options["aws_virtual_hosted_style_request"] = "false" if path_style else "true"

    account_keys = {
        m.group(1): v
        for k, v in hadoop.items()
        if (m := re.fullmatch(r"fs\.azure\.account\.key\.([^.]+)\.(?:dfs|blob)\.core\.windows\.net", k))
    }
    account = target.account if target is not None and target.provider == AZURE else None
    if account is None and len(account_keys) == 1:
        account = next(iter(account_keys))
    if account is not None and account in account_keys:
        options["azure_storage_account_name"] = account
        options["azure_storage_account_key"] = account_keys[account]
    for hadoop_key, option in (
        ("fs.azure.account.oauth2.client.id", "azure_client_id"),
        ("fs.azure.account.oauth2.client.secret", "azure_client_secret"),
    ):
        if hadoop_key in hadoop:
            options[option] = hadoop[hadoop_key]
    endpoint = hadoop.get("fs.azure.account.oauth2.client.endpoint", "")
    if tenant := re.search(r"login\.microsoftonline\.com/([^/]+)/", endpoint):
        options["azure_tenant_id"] = tenant.group(1)

    for keyfile in ("fs.gs.auth.service.account.json.keyfile", "google.cloud.auth.service.account.json.keyfile"):
        if keyfile in hadoop:
            options["google_service_account"] = hadoop[keyfile]
    options.update(_dynamodb_log_store_options(hadoop))
    return options


_DYNAMODB_LOG_STORE = "io.delta.storage.S3DynamoDBLogStore"
_DYNAMODB_LOG_STORE_KEYS = {
    "ddb.tableName": "delta_dynamo_table_name",
    "ddb.region": "aws_region_dynamodb",
    "provisionedThroughput.rcu": "delta_dynamo_read_capacity",
    "provisionedThroughput.wcu": "delta_dynamo_write_capacity",
}


def _dynamodb_log_store_options(settings: Mapping[str, str]) -> dict[str, str]:
    """delta-spark's multi-cluster S3 settings (``spark.delta.logStore.s3a.impl=
    io.delta.storage.S3DynamoDBLogStore`` and ``spark.io.delta.storage.S3DynamoDBLogStore.*``,
    any case: reader options arrive lowercased) as the options of ``dynamodb_commits``.
    The commit table keys tables by the scheme that log store serves (``s3a`` or ``s3``)."""
    lower = {k.lower(): v.strip() for k, v in settings.items()}
    store = _DYNAMODB_LOG_STORE.lower()
    schemes = [s for s in ("s3a", "s3") if lower.get(f"spark.delta.logstore.{s}.impl", "").lower() == store]
    if not schemes and lower.get("spark.delta.logstore.class", "").lower() != store:
        return {}
    options = {"aws_s3_locking_provider": "dynamodb", "delta_dynamo_table_path_scheme": (schemes or ["s3a"])[0]}
    keys = {k.lower(): option for k, option in _DYNAMODB_LOG_STORE_KEYS.items()}
    for key, value in lower.items():
        suffix = key.removeprefix("spark.").removeprefix(f"{store}.")
        if suffix in keys and key.removeprefix("spark.").startswith(store):
            options[keys[suffix]] = value
    return options


# --------------------------------------------------------------------------- errors


def _commit_refusal(options: Mapping[str, str], environ: Mapping[str, str] | None = None) -> str | None:
    """Why commits must be refused under these options (then the environment), if they must.

    ``aws_s3_allow_unsafe_rename=true`` asks to commit without an atomic primitive, which
    this kernel never does. ``aws_s3_locking_provider=dynamodb`` is served by
    ``dynamodb_commits``; another provider names a lock this kernel cannot take, and a commit
    that bypassed it could be overwritten by a writer that took it.
    """
    environ = os.environ if environ is None else environ
    given = {k.lower(): v for k, v in environ.items() if k.lower().startswith("aws_s3_")}
    given.update({k.lower(): v for k, v in options.items()})
    if given.get("aws_s3_allow_unsafe_rename", "").strip().lower() == "true":
        return "aws_s3_allow_unsafe_rename=true asks for commits without an atomic primitive, which this kernel never makes"
    provider = given.get("aws_s3_locking_provider", "").strip()
    if provider and provider.lower() != "dynamodb":
        return (
            f"aws_s3_locking_provider={provider}: only 'dynamodb' is supported, "
            "and a commit that bypassed the lock could be overwritten by a writer that uses it"
        )
    return None


_CONDITIONAL_WRITES_CHECKED: set[tuple[str, str | None, str, str]] = set()
"""(provider, account, bucket, endpoint) where this process has seen a second conditional create refused."""
_CONDITIONAL_WRITES_LOCK = threading.Lock()


def _first_line(error: BaseException) -> str:
    """``obstore``'s message without its debug dump and response body."""
    text = str(error).split("\n\nDebug source", 1)[0]
    return re.sub(r"\s*<\?xml.*", "", text, flags=re.S).strip()


_MISSING_BUCKET = re.compile(r"NoSuchBucket|ContainerNotFound|bucket does not exist|The specified bucket does not exist", re.I)
_DENIED = re.compile(
    r"\b(401|403)\b|InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|AuthenticationFailed|AuthorizationFailure", re.I
)
_NOT_IMPLEMENTED = re.compile(r"\b501 Not Implemented\b|<Code>NotImplemented</Code>", re.I)
_UNREACHABLE = re.compile(r"error sending request|connection refused|dns error|timed out|operation timed out|tcp connect", re.I)


def _cause(error: BaseException, where: str) -> str:
    text = str(error)
    if _MISSING_BUCKET.search(text):
        return f"{where} does not exist"
    if isinstance(error, PermissionDeniedError | UnauthenticatedError) or _DENIED.search(text):
        return f"access to {where} was denied: check the credentials (storage_options or the environment)"
    if _UNREACHABLE.search(text):
        return f"cannot reach the endpoint of {where}: check the endpoint, the network, or allow_http for a plain-HTTP endpoint"
    return f"the store answered with an error on {where}"


# --------------------------------------------------------------------------- storage


class ObjectStoreStorage(Storage):
    """``Storage`` on S3, GCS or Azure; paths are full URLs (``s3://bucket/table/...``).

    One instance serves a table and whatever other buckets of its provider the log names
    (a shallow clone's source), with the same options. Listings give sizes and
    modification times, so no hot path issues a HEAD per file.
    """

    def __init__(self, provider: str, table_root: str, options: Mapping[str, str] | None = None) -> None:
        self.provider = provider
        self.table_root = table_root
        self.options = dict(options or {})
        self.settings = store_settings(provider, self.options)
        self._stores: dict[tuple[str, str | None, str], Any] = {}
        self._lock = threading.Lock()
        self._commits = _commit_table(provider, self.options)

    def __getstate__(self) -> dict[str, Any]:
        """Executors rebuild the stores from the options (the resolved settings travel too)."""
        return {"provider": self.provider, "table_root": self.table_root, "options": self.options, "settings": self.settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._stores = {}
        self._lock = threading.Lock()
        self._commits = _commit_table(self.provider, self.options)

    def __repr__(self) -> str:
        return f"ObjectStoreStorage({self.table_root!r})"

    # -- stores and keys

    def _store(self, url: ObjectUrl) -> Any:
        with self._lock:
            store = self._stores.get(url.store_id)
            if store is None:
                store = self._stores[url.store_id] = self._new_store(url)
            return store

    def _new_store(self, url: ObjectUrl) -> Any:
        settings = self.settings
        common: dict[str, Any] = {"config": settings.config, "client_options": settings.client, "retry_config": settings.retry}
        try:
            if url.provider == S3:
                return S3Store(url.bucket, **common)
            if url.provider == GCS:
                return GCSStore(url.bucket, **common)
            config = dict(settings.config)
            if url.account is not None:
                config["azure_storage_account_name"] = url.account
            return AzureStore(url.bucket, **{**common, "config": config})
        except BaseError as error:
            raise StorageError(
                f"{self.table_root}: cannot configure {_PROVIDER_NAMES[url.provider]} access: {_first_line(error)}"
            ) from error

    def _locate(self, path: str) -> tuple[Any, ObjectUrl]:
        url = parse_url(path)
        if url.provider != self.provider:
            raise ValueError(f"{self.table_root}: {path!r} is on another kind of store than the table")
        return self._store(url), url

    def _where(self, url: ObjectUrl) -> str:
        kind = "container" if url.provider == AZURE else "bucket"
        return f"{_PROVIDER_NAMES[url.provider]} {kind} '{url.bucket}'"

    def _fail(self, action: str, path: str, url: ObjectUrl, error: BaseException) -> StorageError:
        return StorageError(
            f"{self.table_root}: cannot {action} {path}: {_cause(error, self._where(url))} ({_first_line(error)})"
        )

    def _not_found(self, action: str, path: str, url: ObjectUrl, error: FileNotFoundError) -> Exception:
        """A 404 is a missing object, unless the bucket itself is missing."""
        if _MISSING_BUCKET.search(str(error)):
            return self._fail(action, path, url, error)
        return FileNotFoundError(f"{path} does not exist")

    def _list(self, action: str, directory: str, offset: str | None = None) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """(path relative to ``directory``, meta) of every object under it."""
        store, url = self._locate(directory)
        try:
            for chunk in obstore.list(store, url.key or None, offset=offset, chunk_size=_LIST_PAGE):
                for meta in chunk:
                    yield (meta["path"][len(url.key) + 1 :] if url.key else meta["path"]), meta
        except FileNotFoundError as error:
            raise self._not_found(action, directory, url, error) from error
        except BaseError as error:
            raise self._fail(action, directory, url, error) from error

    # -- Storage

    def read(self, path: str) -> bytes:
        store, url = self._locate(path)
        try:
            return bytes(obstore.get(store, url.key).bytes())
        except FileNotFoundError as error:
            raise self._not_found("read", path, url, error) from error
        except BaseError as error:
            raise self._fail("read", path, url, error) from error

    def list_from(self, path: str) -> Iterator[FileStatus]:
        """One listing request per page, starting just below ``path``'s name (the store's
        offset is exclusive), keeping the directory's own files from the name on.

        Pages are fetched as the caller iterates, so a caller that stops early (time
        travel stops past its version) leaves the rest of a long log unlisted. That relies
        on S3, GCS and Azure listing keys by name, the order ``list_from`` promises; a
        listing out of that order is refused rather than half-trusted.
        """
        directory, _, start = path.rpartition("/")
        _, url = self._locate(directory)
        if self._commits is not None and directory.endswith("/_delta_log"):
            self._repair_latest(directory)
        offset = f"{url.key}/{start[:-1]}" if url.key else start[:-1]
        previous = ""
        for relative, meta in self._list("list", directory, offset or None):
            if "/" in relative or relative < start:
                continue
            if relative < previous:
                raise StorageError(
                    f"{self.table_root}: {self._where(url)} listed {directory} out of name order ({previous} before {relative})"
                )
            previous = relative
            yield _status(f"{directory}/{relative}", meta)

    def list_tree(self, directory: str, descend: Callable[[str], bool]) -> Iterator[FileStatus]:
        """The whole prefix in one recursive listing, filtered by ``descend`` on each folder."""
        base = directory.rstrip("/")
        for relative, meta in self._list("list", base):
            *folders, _ = relative.split("/")
            if all(descend(folder) for folder in folders):
                yield _status(f"{base}/{relative}", meta)

    def put_if_absent(self, path: str, data: bytes) -> None:
        """A single conditional PUT (never multipart, whose completion is not conditional everywhere).

        Refused outright under options that ask for unsafe or lock-table commits, and on a
        store seen to ignore conditional writes (``_check_conditional_writes``).
        """
        store, url = self._locate(path)
        if refusal := _commit_refusal(self.options):
            raise StorageError(f"{self.table_root}: cannot commit: {refusal}. {_COMMIT_OPTIONS_HELP}")
        if self._commits is not None:
            self._put_coordinated(path, data)
            return
        self._check_conditional_writes(store, url, path)
        try:
            obstore.put(store, url.key, data, mode="create", use_multipart=False)
        except (AlreadyExistsError, PreconditionError) as error:
            raise FileExistsError(f"{path} already exists") from error
        except (NotSupportedError, NotImplementedError) as error:  # aws_conditional_put=disabled
            raise self._no_conditional_writes(url, _first_line(error)) from error
        except (FileNotFoundError, BaseError) as error:  # a 404 here is the bucket's
            if _NOT_IMPLEMENTED.search(str(error)):  # a server without If-None-Match: 501
                raise self._no_conditional_writes(url, _first_line(error)) from error
            raise self._fail("write", path, url, error) from error

    def _put_coordinated(self, path: str, data: bytes) -> None:
        """``put_if_absent`` under DynamoDB coordination (``dynamodb_commits``): commit files
        through the commit table; other files (deletion vectors, with random names) after
        an existence check, since the store may not honour conditional writes."""
        assert self._commits is not None
        log_dir, _, name = path.rpartition("/")
        if not (log_dir.endswith("/_delta_log") and _COMMIT_NAME.fullmatch(name)):
            if self.exists(path):
                raise FileExistsError(f"{path} already exists")
            self.write(path, data)
            return
        if self.exists(path):
            raise FileExistsError(f"{path} already exists")
        table_path = self._commits.table_path(log_dir.removesuffix("/_delta_log"))
        version = int(name[:20])
        if version > 0:
            previous = self._commits.entry(table_path, f"{version - 1:020d}.json")
            if previous is not None and not previous.complete:
                self._complete(log_dir, previous)
        temp = temp_name(name)
        self.write(f"{log_dir}/{temp}", data)
        try:
            entry = self._commits.claim(table_path, name, temp)  # the version is ours from here on
        except FileExistsError:
            winner = self._commits.entry(table_path, name)
            if winner is None or winner.temp_path != temp:
                if winner is not None and not winner.complete:
                    self._complete(log_dir, winner)  # its writer may be gone; the version must be readable
                raise
            entry = winner  # our own claim, retried by the client after its answer was lost
        try:
            self._complete(log_dir, entry)
        except (OSError, StorageError) as error:
            log.warning(
                "%s: version %d is committed; putting it in place failed and is left to the next reader: %s",
                self.table_root,
                version,
                error,
            )

    def _complete(self, log_dir: str, entry: CommitEntry) -> None:
        """Copy a claimed commit into place unless it is there, then mark its item complete."""
        assert self._commits is not None
        target = f"{log_dir}/{entry.file_name}"
        if not self.exists(target):
            self.copy(f"{log_dir}/{entry.temp_path}", target)
        self._commits.mark_complete(entry)

    def _repair_latest(self, log_dir: str) -> None:
        """Before listing a log: finish the newest commit if its writer died after claiming it."""
        assert self._commits is not None
        latest = self._commits.latest(self._commits.table_path(log_dir.removesuffix("/_delta_log")))
        if latest is not None and not latest.complete:
            self._complete(log_dir, latest)

    def _no_conditional_writes(self, url: ObjectUrl, detail: str) -> StorageError:
        return StorageError(
            f"{self.table_root}: cannot commit: {self._where(url)} does not support conditional writes ({detail}). "
            f"{_COMMIT_OPTIONS_HELP}"
        )

    def _check_conditional_writes(self, store: Any, url: ObjectUrl, path: str) -> None:
        """Before the first commit to a bucket, create a probe object twice, conditionally.

        A store that ignores ``If-None-Match`` (S3-compatible servers that predate conditional writes may)
        answers the second create with success and overwrites: there, two writers of one
        version would both succeed and one commit would be lost without a trace. This is
        the only way to tell before it happens; it costs three requests once per process
        and bucket. A store that refuses the header (501) fails the probe's first create.
        """
        endpoint = self.settings.config.get("aws_endpoint_url") or self.settings.config.get("endpoint") or ""
        checked = (*url.store_id, endpoint)
        if checked in _CONDITIONAL_WRITES_CHECKED:
            return
        probe = f"{path.rpartition('/')[0]}/.sparkdelta-conditional-write-probe-{uuid.uuid4().hex}"
        key = parse_url(probe).key
        try:
            obstore.put(store, key, b"", mode="create", use_multipart=False)
            try:
                obstore.put(store, key, b"", mode="create", use_multipart=False)
            except (AlreadyExistsError, PreconditionError):
                with _CONDITIONAL_WRITES_LOCK:
                    _CONDITIONAL_WRITES_CHECKED.add(checked)
                return
            raise self._no_conditional_writes(url, "it overwrote an object created with If-None-Match: *")
        except (NotSupportedError, NotImplementedError) as error:
            raise self._no_conditional_writes(url, _first_line(error)) from error
        except (FileNotFoundError, BaseError) as error:
            if _NOT_IMPLEMENTED.search(str(error)):
                raise self._no_conditional_writes(url, _first_line(error)) from error
            raise self._fail("write", probe, url, error) from error
        finally:
            try:
                obstore.delete(store, key)
            except (FileNotFoundError, BaseError):
                pass  # a leftover probe is no log file: every reader skips it

    def write(self, path: str, data: bytes) -> None:
        store, url = self._locate(path)
        try:
            obstore.put(store, url.key, data)
        except (FileNotFoundError, BaseError) as error:
            raise self._fail("write", path, url, error) from error

    def delete(self, path: str) -> None:
        store, url = self._locate(path)
        try:
            obstore.delete(store, url.key)
        except FileNotFoundError as error:
            if _MISSING_BUCKET.search(str(error)):
                raise self._fail("delete", path, url, error) from error
        except BaseError as error:
            raise self._fail("delete", path, url, error) from error

    def delete_many(self, paths: Iterable[str], parallelism: int = 8) -> Iterator[str]:
        """Bulk deletes: S3 ``DeleteObjects`` and Azure blob batches take up to 1000 and 256
        keys a request (``obstore`` splits), GCS deletes ten at a time. A batch that fails
        on a missing key (GCS, Azure) is redone key by key, where missing is no error."""
        batches: dict[tuple[str, str | None, str], list[tuple[str, str]]] = {}
        for path in paths:
            store, url = self._locate(path)
            batch = batches.setdefault(url.store_id, [])
            batch.append((path, url.key))
            if len(batch) == _DELETE_BATCH:
                yield from self._delete_batch(store, url, batches.pop(url.store_id))
        for batch in batches.values():
            store, url = self._locate(batch[0][0])
            yield from self._delete_batch(store, url, batch)

    def _delete_batch(self, store: Any, url: ObjectUrl, batch: list[tuple[str, str]]) -> Iterator[str]:
        try:
            obstore.delete(store, [key for _, key in batch])
        except FileNotFoundError as error:
            if _MISSING_BUCKET.search(str(error)):
                raise self._fail("delete", batch[0][0], url, error) from error
            for path, _ in batch:
                self.delete(path)
        except BaseError as error:
            raise self._fail("delete", batch[0][0], url, error) from error
        for path, _ in batch:
            yield path

    def exists(self, path: str) -> bool:
        """A HEAD on the object; failing that, whether any object lies under it (a "directory")."""
        store, url = self._locate(path)
        try:
            obstore.head(store, url.key)
            return True
        except FileNotFoundError:
            pass
        except BaseError as error:
            raise self._fail("read", path, url, error) from error
        try:
            next(iter(obstore.list(store, url.key or None, chunk_size=1)))
            return True
        except StopIteration:
            return False
        except FileNotFoundError as error:
            raise self._not_found("list", path, url, error) from error
        except BaseError as error:
            raise self._fail("list", path, url, error) from error

    def read_range(self, path: str, start: int, end: int) -> bytes:
        store, url = self._locate(path)
        try:
            return bytes(obstore.get_range(store, url.key, start=start, end=end))
        except FileNotFoundError as error:
            raise self._not_found("read", path, url, error) from error
        except BaseError as error:
            raise self._fail("read", path, url, error) from error

    def copy(self, source: str, destination: str) -> None:
        """Server-side within a bucket; across buckets, through memory."""
        store, url = self._locate(destination)
        source_store, source_url = self._locate(source)
        if source_url.store_id != url.store_id:
            self.write(destination, self.read(source))
            return
        try:
            obstore.copy(store, source_url.key, url.key, overwrite=True)
        except FileNotFoundError as error:
            raise self._not_found("copy", source, source_url, error) from error
        except BaseError as error:
            raise self._fail("copy", source, url, error) from error


_COMMIT_NAME = re.compile(r"\d{20}\.json")


def _commit_table(provider: str, options: Mapping[str, str]) -> DynamoDbCommits | None:
    """The DynamoDB commit table S3 commits go through, when the options ask for one."""
    settings = dynamodb_settings(options) if provider == S3 else None
    return DynamoDbCommits(settings) if settings is not None else None


def resolve(location: str, storage_options: Mapping[str, str] | None = None) -> tuple[ObjectStoreStorage, str]:
    """Storage and root for an object-store table location."""
    url = parse_url(location)
    root = canonical_root(location)
    return ObjectStoreStorage(url.provider, root, storage_options), root
