"""Commits coordinated through DynamoDB, as delta-spark's ``S3DynamoDBLogStore`` makes them.

For S3-compatible stores without conditional writes, delta-spark lets the writers of a
table agree on each version through a DynamoDB table instead (its "multi-cluster"
setup). sparkdelta speaks the same protocol on the same table, so it can write beside
delta-spark clusters configured that way. One item per commit:

=============  ====  ========================================================
``tablePath``  S     hash key: the table root as Hadoop spells it (``s3a://bucket/t``)
``fileName``   S     range key: ``00000000000000000007.json``
``tempPath``   S     the commit's temporary copy, relative to ``_delta_log/``
``complete``   S     ``"false"`` until the commit file is in place, then ``"true"``
``expireTime`` N     epoch seconds after which the item may go (DynamoDB TTL), once complete
=============  ====  ========================================================

A commit of version N (``commit``): the previous version's item, if still incomplete, is
completed first; the commit is written to ``_delta_log/.tmp/N.json.<uuid>``; a
``PutItem`` conditioned on ``attribute_not_exists(fileName)`` decides the race (the
loser gets ``FileExistsError``); the temporary copy is copied to ``N.json`` and the item
marked complete. Once the ``PutItem`` succeeded the version is taken: a writer that dies
before the copy leaves an incomplete item that the next writer or reader completes
(``repair_latest``), as delta-spark's ``fixDeltaLog`` does.

delta-rs dropped its own DynamoDB locking provider in 2026 (its 1.x writers ignore
``AWS_S3_LOCKING_PROVIDER`` and use conditional puts); delta-spark's remains.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import StorageError

log = logging.getLogger(__name__)

DEFAULT_TABLE_NAME = "delta_log"
_TTL_SECONDS = 86_400  # delta-spark's default ddb.ttl
_TABLE_ACTIVE_POLLS = 20  # delta-spark waits up to 20 s for a new table


@dataclass(frozen=True)
class DynamoDbSettings:
    """Where the commit table is and how to reach it (delta-rs's option names)."""

    table_name: str
    region: str
    endpoint: str | None
    access_key_id: str | None
    secret_access_key: str | None
    session_token: str | None
    read_capacity: int = 5
    write_capacity: int = 5
    table_path_scheme: str = "s3a"  # how delta-spark's writers spell the tables they key


def dynamodb_settings(options: Mapping[str, str], environ: Mapping[str, str] | None = None) -> DynamoDbSettings | None:
    """The DynamoDB settings when ``aws_s3_locking_provider=dynamodb`` (options first, then
    the environment), else ``None``. Credentials, region and endpoint may be given for
    DynamoDB alone (``aws_access_key_id_dynamodb``, ``aws_region_dynamodb``,
    ``aws_endpoint_url_dynamodb``...); otherwise the S3 credentials and region apply and
    the endpoint is AWS's."""
    environ = os.environ if environ is None else environ
    given = {k.lower(): v for k, v in environ.items() if k.lower().startswith(("aws_", "delta_dynamo_"))}
    given.update({k.lower(): v for k, v in options.items()})
    if given.get("aws_s3_locking_provider", "").strip().lower() != "dynamodb":
        return None

    def first(*keys: str) -> str | None:
        return next((given[k] for k in keys if given.get(k)), None)

    # Credentials go as a set: DynamoDB's own; else the S3 ones when S3 is AWS or DynamoDB
    # is as local as S3 (an emulator); else (an S3-compatible store's keys) boto3's chain.
    if first("aws_access_key_id_dynamodb"):
        names = tuple(f"{k}_dynamodb" for k in _CREDENTIAL_KEYS)
    elif first("aws_endpoint_url") and not first("aws_endpoint_url_dynamodb"):
        names = ()
    else:
        names = _CREDENTIAL_KEYS
    access_key_id, secret_access_key, session_token = (first(n) for n in names) if names else (None, None, None)
    return DynamoDbSettings(
        table_name=first("delta_dynamo_table_name") or DEFAULT_TABLE_NAME,
        region=first("aws_region_dynamodb", "aws_region", "aws_default_region") or "us-east-1",
        endpoint=first("aws_endpoint_url_dynamodb"),
        access_key_id=access_key_id,
        secret_access_key=secret_access_key,
        session_token=session_token,
        read_capacity=int(first("delta_dynamo_read_capacity") or 5),
        write_capacity=int(first("delta_dynamo_write_capacity") or 5),
        table_path_scheme=first("delta_dynamo_table_path_scheme") or "s3a",
    )


_CREDENTIAL_KEYS = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")


@dataclass(frozen=True)
class CommitEntry:
    """One item of the commit table."""

    table_path: str
    file_name: str
    temp_path: str
    complete: bool

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> CommitEntry:
        return cls(item["tablePath"]["S"], item["fileName"]["S"], item["tempPath"]["S"], item["complete"]["S"] == "true")


class DynamoDbCommits:
    """The commit table of one set of settings; the boto3 client is made on first use."""

    def __init__(self, settings: DynamoDbSettings) -> None:
        self.settings = settings
        self._client: Any = None
        self._table_ready = False
        self._lock = threading.Lock()

    def _dynamodb(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import boto3
                except ImportError as error:
                    raise StorageError(
                        "aws_s3_locking_provider=dynamodb needs boto3: pip install 'sparkdelta[dynamodb]'"
                    ) from error
                s = self.settings
                self._client = boto3.client(
                    "dynamodb",
                    region_name=s.region,
                    endpoint_url=s.endpoint,
                    aws_access_key_id=s.access_key_id,
                    aws_secret_access_key=s.secret_access_key,
                    aws_session_token=s.session_token,
                )
            return self._client

    def table_path(self, root: str) -> str:
        """The ``tablePath`` key of a table root (``s3://bucket/t``), as delta-spark spells it:
        Hadoop's qualified path, with the trailing ``/`` Hadoop keeps only at a bucket root."""
        bucket_and_key = root.partition("://")[2]
        return f"{self.settings.table_path_scheme}://{bucket_and_key}" + ("" if "/" in bucket_and_key else "/")

    def _call(self, what: str, request: Callable[[Any], Any]) -> Any:
        """Run one request, naming the table in errors other than a lost race or a missing table."""
        client = self._dynamodb()
        try:
            return request(client)
        except (client.exceptions.ConditionalCheckFailedException, client.exceptions.ResourceNotFoundException):
            raise
        except Exception as error:  # botocore's errors share no base worth naming
            raise StorageError(f"DynamoDB table '{self.settings.table_name}': cannot {what}: {error}") from error

    def ensure_table(self) -> None:
        """Create the commit table when missing, as delta-spark does (provisioned capacity)."""
        if self._table_ready:
            return
        client = self._dynamodb()
        name = self.settings.table_name
        try:
            status = client.describe_table(TableName=name)["Table"]["TableStatus"]
        except client.exceptions.ResourceNotFoundException:
            log.info("creating the DynamoDB commit table %s", name)
            try:
                client.create_table(
                    TableName=name,
                    AttributeDefinitions=[
                        {"AttributeName": "tablePath", "AttributeType": "S"},
                        {"AttributeName": "fileName", "AttributeType": "S"},
                    ],
                    KeySchema=[
                        {"AttributeName": "tablePath", "KeyType": "HASH"},
                        {"AttributeName": "fileName", "KeyType": "RANGE"},
                    ],
                    ProvisionedThroughput={
                        "ReadCapacityUnits": self.settings.read_capacity,
                        "WriteCapacityUnits": self.settings.write_capacity,
                    },
                )
            except client.exceptions.ResourceInUseException:
                pass  # another writer created it
            status = "CREATING"
        except Exception as error:
            raise StorageError(f"DynamoDB table '{name}': cannot describe it: {error}") from error
        for _ in range(_TABLE_ACTIVE_POLLS):
            if status == "ACTIVE":
                self._table_ready = True
                return
            time.sleep(1)
            status = client.describe_table(TableName=name)["Table"]["TableStatus"]
        raise StorageError(f"DynamoDB table '{name}' is not ACTIVE after {_TABLE_ACTIVE_POLLS} s (status {status})")

    def entry(self, table_path: str, file_name: str) -> CommitEntry | None:
        key = {"tablePath": {"S": table_path}, "fileName": {"S": file_name}}
        try:
            item = self._call(
                f"read {file_name} of {table_path}",
                lambda c: c.get_item(TableName=self.settings.table_name, Key=key, ConsistentRead=True),
            ).get("Item")
        except self._dynamodb().exceptions.ResourceNotFoundException:
            return None  # no commit table yet: no writer has claimed anything
        return CommitEntry.from_item(item) if item else None

    def latest(self, table_path: str) -> CommitEntry | None:
        """The table's newest item (the highest version ever claimed)."""
        try:
            found = self._call(
                f"query {table_path}",
                lambda c: c.query(
                    TableName=self.settings.table_name,
                    KeyConditionExpression="tablePath = :path",
                    ExpressionAttributeValues={":path": {"S": table_path}},
                    ScanIndexForward=False,
                    Limit=1,
                    ConsistentRead=True,
                ),
            ).get("Items", [])
        except self._dynamodb().exceptions.ResourceNotFoundException:
            return None
        return CommitEntry.from_item(found[0]) if found else None

    def claim(self, table_path: str, file_name: str, temp_path: str) -> CommitEntry:
        """Take the version: ``FileExistsError`` when another writer has it."""
        self.ensure_table()
        client = self._dynamodb()
        item = {
            "tablePath": {"S": table_path},
            "fileName": {"S": file_name},
            "tempPath": {"S": temp_path},
            "complete": {"S": "false"},
        }
        try:
            self._call(
                f"claim {file_name} of {table_path}",
                lambda c: c.put_item(
                    TableName=self.settings.table_name, Item=item, ConditionExpression="attribute_not_exists(fileName)"
                ),
            )
        except client.exceptions.ConditionalCheckFailedException as error:
            raise FileExistsError(f"{table_path}/_delta_log/{file_name} is taken (DynamoDB commit table)") from error
        return CommitEntry(table_path, file_name, temp_path, complete=False)

    def mark_complete(self, entry: CommitEntry) -> None:
        item = {
            "tablePath": {"S": entry.table_path},
            "fileName": {"S": entry.file_name},
            "tempPath": {"S": entry.temp_path},
            "complete": {"S": "true"},
            "expireTime": {"N": str(int(time.time()) + _TTL_SECONDS)},
        }
        self._call(
            f"complete {entry.file_name} of {entry.table_path}",
            lambda c: c.put_item(TableName=self.settings.table_name, Item=item),
        )


def temp_name(file_name: str) -> str:
    """Where a commit waits before it is copied in place, relative to ``_delta_log/`` (delta-spark's spelling)."""
    return f".tmp/{file_name}.{uuid.uuid4()}"
