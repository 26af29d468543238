"""Commits coordinated through DynamoDB, as delta-spark's ``S3DynamoDBLogStore`` makes them.

Against moto's server, which serves S3 and DynamoDB on one endpoint. The store that
needs this coordination is one without conditional writes: moto behind a proxy that drops
``If-None-Match`` plays it (there, the kernel alone refuses to commit). Oracles: boto3
reading the commit table and the bucket; the item layout is delta-spark's
(``storage-s3-dynamodb/.../S3DynamoDBLogStore.java``, ``BaseExternalLogStore.java``);
a writer that died after claiming a version is built by hand, item and temporary file,
as delta-spark's leaves them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_helpers import SCHEMA_STRING, add, now_ms, race_appenders
from object_stores import MotoServer, RecordingProxy

from sparkdelta.exceptions import StorageError
from sparkdelta.kernel import Metadata, Protocol, Table
from sparkdelta.kernel.dynamodb_commits import CommitEntry, DynamoDbCommits, dynamodb_settings
from sparkdelta.kernel.object_store import storage_options_from_hadoop


@pytest.fixture
def no_conditional_writes(moto_s3: MotoServer) -> Iterator[str]:
    """An S3 endpoint that ignores ``If-None-Match``: moto behind a proxy dropping the header."""
    proxy = RecordingProxy(int(moto_s3.endpoint.rsplit(":", 1)[1]), drop_headers=["If-None-Match"])
    yield proxy.endpoint
    proxy.close()


def coordinated(server: MotoServer, s3_endpoint: str, table_name: str) -> dict[str, str]:
    """Options for S3 at ``s3_endpoint`` with commits through DynamoDB table ``table_name`` on moto."""
    return {
        **server.options,
        "aws_endpoint_url": s3_endpoint,
        "aws_s3_locking_provider": "dynamodb",
        "delta_dynamo_table_name": table_name,
        "aws_endpoint_url_dynamodb": server.endpoint,
    }


def dynamodb(server: MotoServer):  # noqa: ANN201 - boto3's client
    import boto3

    return boto3.client(
        "dynamodb",
        endpoint_url=server.endpoint,
        aws_access_key_id=server.access_key,
        aws_secret_access_key=server.secret_key,
        region_name="us-east-1",
    )


def items(server: MotoServer, table_name: str) -> dict[str, dict]:
    """The commit table's items by fileName, values unwrapped."""
    scanned = dynamodb(server).scan(TableName=table_name, ConsistentRead=True)["Items"]
    return {i["fileName"]["S"]: {k: next(iter(v.values())) for k, v in i.items()} for i in scanned}


def claimed_by_another_writer(
    server: MotoServer, table_name: str, bucket: str, file_name: str, temp: str, complete: bool
) -> None:
    """The item another (delta-spark) writer puts for ``file_name`` of table ``t`` in ``bucket``."""
    dynamodb(server).put_item(
        TableName=table_name,
        Item={
            "tablePath": {"S": f"s3a://{bucket}/t"},
            "fileName": {"S": file_name},
            "tempPath": {"S": temp},
            "complete": {"S": str(complete).lower()},
        },
    )


def metadata() -> list:
    """A new table's first actions (``add`` files go in partition ``p=a``)."""
    return [Protocol(1, 2), Metadata(str(uuid.uuid4()), SCHEMA_STRING, ("p",), {}, created_time=now_ms())]


def test_commits_go_through_the_commit_table_as_delta_spark_writes_them(moto_s3: MotoServer, no_conditional_writes: str) -> None:
    bucket, table_name = moto_s3.new_bucket("ddb"), f"commits_{time.time_ns()}"
    table = Table(f"s3://{bucket}/t", storage_options=coordinated(moto_s3, no_conditional_writes, table_name))
    table.transaction().commit(metadata(), "CREATE TABLE")
    table.transaction().commit([add("a.parquet")], "WRITE")

    description = dynamodb(moto_s3).describe_table(TableName=table_name)["Table"]
    assert {k["AttributeName"]: k["KeyType"] for k in description["KeySchema"]} == {"tablePath": "HASH", "fileName": "RANGE"}
    assert description["ProvisionedThroughput"]["ReadCapacityUnits"] == 5  # delta-spark's default
    found = items(moto_s3, table_name)
    assert sorted(found) == ["00000000000000000000.json", "00000000000000000001.json"]
    for name, item in found.items():
        assert item["tablePath"] == f"s3a://{bucket}/t"  # Hadoop's spelling, as delta-spark keys it
        assert item["complete"] == "true"
        assert abs(int(item["expireTime"]) - (time.time() + 86_400)) < 120
        assert item["tempPath"].startswith(f".tmp/{name}.")
        temp = moto_s3.client().get_object(Bucket=bucket, Key=f"t/_delta_log/{item['tempPath']}")["Body"].read()
        final = moto_s3.client().get_object(Bucket=bucket, Key=f"t/_delta_log/{name}")["Body"].read()
        assert temp == final
    assert table.snapshot().file_paths() == ["a.parquet"]


def test_without_coordination_the_same_store_refuses_to_commit(moto_s3: MotoServer, no_conditional_writes: str) -> None:
    bucket = moto_s3.new_bucket("ddb-off")
    table = Table(f"s3://{bucket}/t", storage_options={**moto_s3.options, "aws_endpoint_url": no_conditional_writes})
    with pytest.raises(StorageError, match="does not support conditional writes"):
        table.transaction().commit(metadata(), "CREATE TABLE")


def test_a_claimed_version_is_a_lost_race_and_nothing_is_written(moto_s3: MotoServer, no_conditional_writes: str) -> None:
    bucket, table_name = moto_s3.new_bucket("ddb-race"), f"commits_{time.time_ns()}"
    table = Table(f"s3://{bucket}/t", storage_options=coordinated(moto_s3, no_conditional_writes, table_name))
    table.transaction().commit(metadata(), "CREATE TABLE")
    # another writer claimed version 1 (its copy into place is not visible yet)
    claimed_by_another_writer(moto_s3, table_name, bucket, "00000000000000000001.json", ".tmp/00000000000000000001.json.o", True)
    path = f"s3://{bucket}/t/_delta_log/00000000000000000001.json"
    with pytest.raises(FileExistsError):
        table.storage.put_if_absent(path, b'{"commitInfo":{}}\n')
    assert not table.storage.exists(path)


def test_a_writer_that_died_after_claiming_is_completed_by_the_next_reader_and_writer(
    moto_s3: MotoServer, no_conditional_writes: str
) -> None:
    bucket, table_name = moto_s3.new_bucket("ddb-fix"), f"commits_{time.time_ns()}"
    options = coordinated(moto_s3, no_conditional_writes, table_name)
    table = Table(f"s3://{bucket}/t", storage_options=options)
    table.transaction().commit(metadata(), "CREATE TABLE")

    def die_after_claiming(version: int, path: str) -> None:
        """What a delta-spark writer leaves when it dies between its PutItem and the copy."""
        name = f"{version:020d}.json"
        temp = f".tmp/{name}.{version}-dead"
        body = json.dumps(
            {"add": {"path": path, "partitionValues": {"p": "a"}, "size": 1, "modificationTime": 1, "dataChange": True}}
        )
        moto_s3.client().put_object(Bucket=bucket, Key=f"t/_delta_log/{temp}", Body=body.encode() + b"\n")
        claimed_by_another_writer(moto_s3, table_name, bucket, name, temp, complete=False)

    die_after_claiming(1, "dead.parquet")
    assert Table(f"s3://{bucket}/t", storage_options=options).snapshot().file_paths() == ["dead.parquet"]  # a reader
    assert items(moto_s3, table_name)["00000000000000000001.json"]["complete"] == "true"

    die_after_claiming(2, "dead-again.parquet")
    result = table.transaction().commit([add("alive.parquet")], "WRITE")  # a writer
    assert result.version == 3
    assert sorted(table.snapshot().file_paths()) == ["alive.parquet", "dead-again.parquet", "dead.parquet"]
    assert all(item["complete"] == "true" for item in items(moto_s3, table_name).values())


def test_processes_on_a_store_without_conditional_writes_lose_nothing(
    moto_s3: MotoServer, no_conditional_writes: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four processes, configured by the environment alone (as delta-rs users configured it), race."""
    bucket, table_name = moto_s3.new_bucket("ddb-par"), f"commits_{time.time_ns()}"
    for key, value in coordinated(moto_s3, no_conditional_writes, table_name).items():
        monkeypatch.setenv(key.upper(), value)
    root = f"s3://{bucket}/t"
    Table(root).transaction().commit(metadata(), "CREATE TABLE")
    workers, per_worker = 4, 4
    events = race_appenders(root, workers, per_worker, tmp_path)
    total = workers * per_worker
    assert sorted(e["version"] for e in events) == list(range(1, total + 1))
    keys = moto_s3.keys(bucket, "t/_delta_log/")
    assert [k for k in keys if k.endswith(".json") and "/.tmp/" not in k] == [
        f"t/_delta_log/{v:020d}.json" for v in range(total + 1)
    ]
    assert sorted(Table(root).snapshot().file_paths()) == sorted(e["path"] for e in events)
    assert sorted(items(moto_s3, table_name)) == [f"{v:020d}.json" for v in range(total + 1)]


def test_delta_spark_multi_cluster_settings_select_dynamodb_commits() -> None:
    settings = {
        "spark.delta.logStore.s3a.impl": "io.delta.storage.S3DynamoDBLogStore",
        "spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName": "shared_commits",
        "spark.io.delta.storage.S3DynamoDBLogStore.ddb.region": "eu-west-1",
        "io.delta.storage.S3DynamoDBLogStore.provisionedThroughput.rcu": "10",
    }
    assert storage_options_from_hadoop(settings) == {
        "aws_s3_locking_provider": "dynamodb",
        "delta_dynamo_table_path_scheme": "s3a",
        "delta_dynamo_table_name": "shared_commits",
        "aws_region_dynamodb": "eu-west-1",
        "delta_dynamo_read_capacity": "10",
    }
    assert storage_options_from_hadoop({"spark.delta.logStore.s3a.impl": "io.delta.storage.S3SingleDriverLogStore"}) == {}
    lowercased = {k.lower(): v for k, v in settings.items()}  # as reader options arrive
    assert storage_options_from_hadoop(lowercased)["delta_dynamo_table_name"] == "shared_commits"
    emr = {"spark.delta.logStore.s3.impl": "io.delta.storage.S3DynamoDBLogStore"}
    assert storage_options_from_hadoop(emr)["delta_dynamo_table_path_scheme"] == "s3"


def test_a_claim_retried_after_its_answer_was_lost_is_ours(
    moto_s3: MotoServer, no_conditional_writes: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client retries a PutItem whose answer was lost; the retry's failed condition is
    our own claim, not a lost race (else a blind append would commit twice)."""
    bucket, table_name = moto_s3.new_bucket("ddb-retry"), f"commits_{time.time_ns()}"
    table = Table(f"s3://{bucket}/t", storage_options=coordinated(moto_s3, no_conditional_writes, table_name))
    table.transaction().commit(metadata(), "CREATE TABLE")
    real = DynamoDbCommits.claim

    def claimed_then_retried(self: DynamoDbCommits, table_path: str, file_name: str, temp_path: str) -> CommitEntry:
        real(self, table_path, file_name, temp_path)
        return real(self, table_path, file_name, temp_path)  # the retry: ConditionalCheckFailed

    monkeypatch.setattr(DynamoDbCommits, "claim", claimed_then_retried)
    assert table.transaction().commit([add("once.parquet")], "WRITE").version == 1
    monkeypatch.undo()
    assert table.snapshot().version == 1 and table.snapshot().file_paths() == ["once.parquet"]
    assert items(moto_s3, table_name)["00000000000000000001.json"]["complete"] == "true"


def test_the_loser_of_a_race_puts_a_dead_winner_in_place(moto_s3: MotoServer, no_conditional_writes: str) -> None:
    bucket, table_name = moto_s3.new_bucket("ddb-loser"), f"commits_{time.time_ns()}"
    table = Table(f"s3://{bucket}/t", storage_options=coordinated(moto_s3, no_conditional_writes, table_name))
    table.transaction().commit(metadata(), "CREATE TABLE")
    winner = b'{"commitInfo":{"operation":"WRITE"}}\n'
    moto_s3.client().put_object(Bucket=bucket, Key="t/_delta_log/.tmp/00000000000000000001.json.w", Body=winner)
    claimed_by_another_writer(moto_s3, table_name, bucket, "00000000000000000001.json", ".tmp/00000000000000000001.json.w", False)
    path = f"s3://{bucket}/t/_delta_log/00000000000000000001.json"
    with pytest.raises(FileExistsError):
        table.storage.put_if_absent(path, b'{"commitInfo":{"operation":"LOSER"}}\n')
    assert table.storage.read(path) == winner
    assert items(moto_s3, table_name)["00000000000000000001.json"]["complete"] == "true"


def test_table_paths_as_delta_spark_keys_them() -> None:
    commits = DynamoDbCommits(dynamodb_settings({"aws_s3_locking_provider": "dynamodb"}, environ={}))  # type: ignore[arg-type]
    assert commits.table_path("s3://bucket/a/t") == "s3a://bucket/a/t"
    assert commits.table_path("s3://bucket") == "s3a://bucket/"  # Hadoop keeps the slash at a bucket root
    on_s3 = {"aws_s3_locking_provider": "dynamodb", "delta_dynamo_table_path_scheme": "s3"}
    assert DynamoDbCommits(dynamodb_settings(on_s3, environ={})).table_path("s3://bucket/t") == "s3://bucket/t"  # type: ignore[arg-type]


def test_dynamodb_credentials_go_as_a_set() -> None:
    s3 = {"aws_s3_locking_provider": "dynamodb", "aws_access_key_id": "s3-key", "aws_secret_access_key": "s3-secret"}
    aws = dynamodb_settings(s3, environ={})
    assert aws is not None and (aws.access_key_id, aws.secret_access_key) == ("s3-key", "s3-secret")
    minio = dynamodb_settings({**s3, "aws_endpoint_url": "http://minio:9000"}, environ={})
    assert minio is not None and minio.access_key_id is None  # an S3-compatible store's keys are not AWS's: boto3's chain
    own = dynamodb_settings(
        {
            **s3,
            "aws_access_key_id_dynamodb": "d-key",
            "aws_secret_access_key_dynamodb": "d-secret",
            "aws_session_token": "s3-token",
        },
        environ={},
    )
    assert own is not None and (own.access_key_id, own.secret_access_key, own.session_token) == ("d-key", "d-secret", None)
