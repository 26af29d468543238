"""Delta tables on object stores, against real endpoints on loopback.

S3 is moto's server (``moto_server``), Azure Blob is Azurite; both are started by the
fixtures in ``object_stores.py``. The oracles are independent of the kernel: boto3 (or a
signed REST call) for what is stored, delta-rs (``deltalake``, its own Rust S3 client)
for what a table holds, and the kernel's own results on local disk for the conformance
tables.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import deltalake
import obstore
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from botocore.exceptions import ClientError
from click.testing import CliRunner
from kernel_helpers import SCHEMA_STRING, add, now_ms, race_appenders
from object_stores import CuttableProxy, HttpRequest, MotoServer, RecordingProxy, free_port, start_moto
from oracles import conformance_root, load_manifest

from sparkdelta.cli import main as cli
from sparkdelta.kernel import (
    AddFile,
    ConcurrentAppendException,
    DeltaError,
    IsolationLevel,
    Metadata,
    Protocol,
    RemoveFile,
    StorageError,
    Table,
)
from sparkdelta.kernel.object_store import (
    DEFAULT_RETRY,
    ObjectStoreStorage,
    canonical_root,
    hadoop_url,
    parse_url,
    storage_options_from_hadoop,
    store_settings,
)
from sparkdelta.kernel.snapshot import clear_log_cache
from sparkdelta.kernel.storage import FileStatus, LocalStorage
from sparkdelta.kernel.vacuum import execute_vacuum, plan_vacuum

SER = IsolationLevel.SERIALIZABLE


# --------------------------------------------------------------------------- helpers


def create(table: Table, configuration: dict[str, str] | None = None) -> None:
    metadata = Metadata(str(uuid.uuid4()), SCHEMA_STRING, ("p",), dict(configuration or {}), created_time=now_ms())
    table.transaction().commit([Protocol(1, 2), metadata], "CREATE TABLE")


def put_parquet(table: Table, relative: str, ids: list[int], p: str = "a") -> AddFile:
    """A real Parquet data file (``id``; ``p`` is in the path) written through the table's storage."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), sink)
    data = sink.getvalue().to_pybytes()
    table.storage.write(f"{table.root}/{relative}", data)
    return AddFile(relative, {"p": p}, len(data), now_ms())


def drop(add_file: AddFile) -> RemoveFile:
    return RemoveFile(add_file.path, now_ms(), data_change=True, partition_values=dict(add_file.partition_values))


def delta_rs(url: str, options: dict[str, str], version: int | None = None) -> deltalake.DeltaTable:
    return deltalake.DeltaTable(url, version=version, storage_options=options)


def delta_rs_paths(url: str, options: dict[str, str], version: int | None = None) -> set[str]:
    actions = pa.table(delta_rs(url, options, version).get_add_actions(flatten=True))
    return set(actions.column("path").to_pylist())


def delta_rs_ids(url: str, options: dict[str, str], version: int | None = None) -> list[int]:
    return sorted(delta_rs(url, options, version).to_pyarrow_table().column("id").to_pylist())


def commit_keys(server: MotoServer, bucket: str, prefix: str) -> list[int]:
    """Commit versions present in the bucket, by boto3's listing."""
    names = [k.rsplit("/", 1)[1] for k in server.keys(bucket, f"{prefix}/_delta_log/")]
    return sorted(int(n[:20]) for n in names if n.endswith(".json") and n[:20].isdigit())


def read_commit(server: MotoServer, bucket: str, prefix: str, version: int) -> list[dict]:
    body = server.client().get_object(Bucket=bucket, Key=f"{prefix}/_delta_log/{version:020d}.json")["Body"].read()
    assert body.endswith(b"\n"), f"version {version} does not end with a newline"
    return [json.loads(line) for line in body.decode().splitlines()]


# --------------------------------------------------------------------------- configuration


def test_options_override_the_environment_and_client_keys_are_split() -> None:
    environ = {"AWS_ALLOW_HTTP": "false", "AWS_REGION": "eu-west-1", "AWS_TIMEOUT": "10s", "GOOGLE_ALLOW_HTTP": "true"}
    settings = store_settings(
        "s3",
        {
            "AWS_ACCESS_KEY_ID": "k",
            "aws_allow_http": "true",
            "Endpoint": "http://e",
            "max_retries": "2",
            "retry_timeout": "1500ms",
        },
        environ,
    )
    assert settings.config == {"aws_access_key_id": "k", "endpoint": "http://e"}
    assert settings.client == {"allow_http": "true", "timeout": "10s"}  # option over env; env's timeout kept
    assert settings.retry["max_retries"] == 2 and settings.retry["retry_timeout"].total_seconds() == 1.5
    assert settings.retry["backoff"] == DEFAULT_RETRY["backoff"]
    # delta-rs's lock and rename options are no store settings (commits refuse them: see below)
    assert store_settings("s3", {"AWS_S3_ALLOW_UNSAFE_RENAME": "true"}, {}).config == {}


def test_unknown_option_is_refused_naming_the_table(moto_s3: MotoServer) -> None:
    table = Table(f"s3://{moto_s3.new_bucket('opt')}/t", storage_options={**moto_s3.options, "aws_no_such_key": "x"})
    with pytest.raises(StorageError, match=rf"{table.root}: cannot configure S3 access: .*aws_no_such_key"):
        table.snapshot()


def test_urls_roots_and_hadoop_spelling() -> None:
    assert canonical_root("s3a://b/x/t/") == canonical_root("S3://b/x/t") == "s3://b/x/t"
    assert parse_url("s3a://b/x/t").key == parse_url("s3://b/x/t/").key == "x/t"
    assert parse_url("abfss://c@acct.dfs.core.windows.net/x").store_id == ("azure", "acct", "c")
    assert parse_url("wasbs://c@acct.blob.core.windows.net/x").store_id == ("azure", "acct", "c")
    assert parse_url("az://c/x").store_id == ("azure", None, "c")
    assert hadoop_url("s3://b/t") == "s3a://b/t"
    assert hadoop_url("az://c/t", "acct") == "abfss://c@acct.dfs.core.windows.net/t"
    assert hadoop_url("gs://b/t") == "gs://b/t"


def test_hadoop_settings_map_to_storage_options() -> None:
    settings = {
        "spark.hadoop.fs.s3a.access.key": "AK",
        "spark.hadoop.fs.s3a.secret.key": "SK",
        "fs.s3a.session.token": "TOK",
        "fs.s3a.endpoint": "minio:9000",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint.region": "eu-central-1",
        "fs.s3a.bucket.special.access.key": "AK2",
        "fs.azure.account.key.acct.dfs.core.windows.net": "AZKEY",
        "fs.azure.account.key.other.blob.core.windows.net": "OTHER",
        "fs.gs.auth.service.account.json.keyfile": "/keys/sa.json",
        "fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",  # no counterpart: left out
    }
    assert storage_options_from_hadoop(settings, "s3a://plain/t") == {
        "aws_access_key_id": "AK",
        "aws_secret_access_key": "SK",
        "aws_session_token": "TOK",
        "aws_region": "eu-central-1",
        "aws_endpoint_url": "http://minio:9000",
        "aws_allow_http": "true",
        "aws_virtual_hosted_style_request": "false",
        "google_service_account": "/keys/sa.json",
    }
    assert storage_options_from_hadoop(settings, "s3a://special/t")["aws_access_key_id"] == "AK2"
    azure = storage_options_from_hadoop(settings, "abfss://c@acct.dfs.core.windows.net/t")
    assert (azure["azure_storage_account_name"], azure["azure_storage_account_key"]) == ("acct", "AZKEY")
    oauth = storage_options_from_hadoop(
        {
            "fs.azure.account.oauth2.client.id": "cid",
            "fs.azure.account.oauth2.client.secret": "cs",
            "fs.azure.account.oauth2.client.endpoint": "https://login.microsoftonline.com/tenant-1/oauth2/token",
        }
    )
    assert oauth == {"azure_client_id": "cid", "azure_client_secret": "cs", "azure_tenant_id": "tenant-1"}
    https = storage_options_from_hadoop({"fs.s3a.endpoint": "s3.eu-west-1.amazonaws.com"})
    assert https == {"aws_endpoint_url": "https://s3.eu-west-1.amazonaws.com"}


def test_hdfs_is_refused_naming_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HADOOP_HOME", "ARROW_LIBHDFS_DIR", "CLASSPATH"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(NotImplementedError, match=r"hdfs://nn:8020/t.*libhdfs\.so.*Hadoop jars"):
        Table("hdfs://nn:8020/t")


# --------------------------------------------------------------------------- kernel on S3


def test_kernel_round_trip_on_s3_and_s3a_spellings(moto_s3: MotoServer) -> None:
    bucket = moto_s3.new_bucket("roundtrip")
    options = moto_s3.options
    s3a = Table(f"s3a://{bucket}/sales/", storage_options=options)
    s3 = Table(f"s3://{bucket}/sales", storage_options=options)
    assert s3a.root == s3.root == f"s3://{bucket}/sales"

    create(s3a, {"delta.checkpointInterval": "3"})
    a = put_parquet(s3a, "p=a/a.parquet", [1, 2])
    b = put_parquet(s3, "p=a/b.parquet", [3])
    s3.transaction().commit([a, b], "WRITE")
    c = put_parquet(s3a, "p=b/c.parquet", [4, 5], "b")
    s3a.transaction().commit([c], "WRITE")
    s3.transaction().commit([drop(a)], "DELETE")
    d = put_parquet(s3a, "p=b/d.parquet", [6], "b")
    s3a.transaction().commit([d], "WRITE")
    expected = [set(), {a.path, b.path}, {a.path, b.path, c.path}, {b.path, c.path}, {b.path, c.path, d.path}]

    keys = moto_s3.keys(bucket)
    assert f"sales/_delta_log/{3:020d}.checkpoint.parquet" in keys and "sales/_delta_log/_last_checkpoint" in keys
    assert not any(k.startswith("s3a") or "//" in k for k in keys), keys  # one set of objects, whatever the spelling
    assert s3.snapshot().segment.checkpoint_version == 3
    shipped = pickle.loads(pickle.dumps(s3.storage))  # as Spark ships it to executors: rebuilt from its options
    assert shipped.read(f"{s3.root}/{b.path}") == s3.storage.read(f"{s3a.root}/{b.path}")
    for version, files in enumerate(expected):
        assert set(s3.snapshot(version).file_paths()) == set(s3a.snapshot(version).file_paths()) == files
        if version:
            assert delta_rs_paths(f"s3://{bucket}/sales", options, version) == files
    assert delta_rs_ids(f"s3a://{bucket}/sales", options) == [3, 4, 5, 6]

    history = s3a.history()
    assert [(r.version, r.commit_info["operation"]) for r in history] == [
        (4, "WRITE"),
        (3, "DELETE"),
        (2, "WRITE"),
        (1, "WRITE"),
        (0, "CREATE TABLE"),
    ]
    for record in history:
        assert s3.snapshot(timestamp=record.timestamp).version == record.version

    orphan = put_parquet(s3, "p=a/orphan.parquet", [99])
    s3.storage.write(f"{s3.root}/_staging/keep.parquet", b"x")  # hidden: VACUUM never touches it
    plan = plan_vacuum(s3a, 0, check_retention=False, now_ms=now_ms() + 5_000)
    assert {f.path for f in plan.files} == {f"{s3.root}/{a.path}", f"{s3.root}/{orphan.path}"}
    execute_vacuum(s3a, plan)
    data = {k.removeprefix("sales/") for k in moto_s3.keys(bucket, "sales/") if not k.startswith("sales/_delta_log/")}
    assert data == {b.path, c.path, d.path, "_staging/keep.parquet"}
    assert [r.commit_info["operation"] for r in s3.history(2)] == ["VACUUM END", "VACUUM START"]
    assert delta_rs_ids(f"s3://{bucket}/sales", options) == [3, 4, 5, 6]


@pytest.mark.parametrize("scheme", ["s3", "s3a"])
def test_vacuum_keeps_files_the_log_names_by_their_url(moto_s3: MotoServer, scheme: str) -> None:
    """A file inside the root named by its absolute (encoded) URL is the same file as its relative key."""
    bucket = moto_s3.new_bucket("urlnamed")
    table = Table(f"s3://{bucket}/dt=2024-01-01 é", storage_options=moto_s3.options)
    create(table)
    named = put_parquet(table, "p=a/named.parquet", [1])
    plain = put_parquet(table, "p=a/plain.parquet", [2])
    url = f"{scheme}://{bucket}/dt%3D2024-01-01%20%C3%A9/p%3Da/named.parquet"
    table.transaction().commit([AddFile(url, {"p": "a"}, named.size, now_ms()), plain], "WRITE")
    plan = plan_vacuum(table, 0, check_retention=False, now_ms=now_ms() + 5_000)
    assert list(plan.files) == []
    execute_vacuum(table, plan)
    assert {k.rsplit("/", 1)[-1] for k in moto_s3.keys(bucket) if "_delta_log" not in k} == {"named.parquet", "plain.parquet"}


MANIFEST = load_manifest()


@pytest.fixture(scope="module")
def conformance_bucket(moto_s3: MotoServer) -> str:
    """Every conformance table, uploaded as is (log and data files) under ``tables/``."""
    tables = conformance_root() / "tables"
    bucket = moto_s3.new_bucket("conformance")
    storage = ObjectStoreStorage("s3", f"s3://{bucket}", moto_s3.options)
    files = [p for p in tables.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda p: storage.write(f"s3://{bucket}/tables/{p.relative_to(tables)}", p.read_bytes()), files))
    return bucket


def _snapshot_facts(table: Table, version: int | None) -> tuple:
    """What a reader learns from one snapshot, or the error it gets (root-independent)."""
    try:
        snapshot = table.snapshot(version)
    except DeltaError as error:
        return type(error).__name__, str(error).replace(table.root, "<root>")
    tombstones = sorted(snapshot.tombstones.column("path").to_pylist())
    return snapshot.version, sorted(snapshot.file_paths()), snapshot.protocol, snapshot.metadata, tombstones


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_conformance_table_reads_the_same_on_s3_as_on_disk(name: str, conformance_bucket: str, moto_s3: MotoServer) -> None:
    local = Table(str(conformance_root() / "tables" / name))
    remote = Table(f"s3://{conformance_bucket}/tables/{name}", storage_options=moto_s3.options)
    versions = sorted(int(v) for v in MANIFEST[name].get("versions", {})) or [None]
    for version in [*versions, None]:
        facts = _snapshot_facts(remote, version)
        assert facts == _snapshot_facts(local, version), f"{name} at version {version}"
    if isinstance(facts[0], int):
        assert [r.commit_info for r in remote.history()] == [r.commit_info for r in local.history()]


# --------------------------------------------------------------------------- interop with delta-rs on S3


def test_delta_rs_writes_and_the_kernel_reads_every_version(moto_s3: MotoServer) -> None:
    url = f"s3://{moto_s3.new_bucket('from-rs')}/events"
    options = moto_s3.options
    batches = [
        (pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x", "y", "x"]}), "append"),
        (pa.table({"id": pa.array([4], pa.int64()), "p": ["y"]}), "append"),
        (pa.table({"id": pa.array([5, 6], pa.int64()), "p": ["z", "z"]}), "overwrite"),
        (pa.table({"id": pa.array([7], pa.int64()), "p": ["x"]}), "append"),
    ]
    for data, mode in batches:
        deltalake.write_deltalake(url, data, mode=mode, partition_by=["p"], storage_options=options)
    delta_rs(url, options).delete("id = 5")
    table = Table(url.replace("s3://", "s3a://"), storage_options=options)
    latest = delta_rs(url, options).version()
    assert table.snapshot().version == latest == 4
    for version in range(latest + 1):
        snapshot = table.snapshot(version)
        assert set(snapshot.file_paths()) == delta_rs_paths(url, options, version), f"version {version}"
        assert snapshot.schema.to_json() == json.loads(delta_rs(url, options, version).schema().to_json())
    assert [r.version for r in table.history()] == list(range(latest, -1, -1))


def test_kernel_writes_and_delta_rs_reads_every_version(moto_s3: MotoServer) -> None:
    url = f"s3://{moto_s3.new_bucket('from-kernel')}/events"
    options = moto_s3.options
    table = Table(url, storage_options=options)
    create(table, {"delta.checkpointInterval": "2"})
    expected_ids: list[list[int]] = [[]]
    live: dict[str, tuple[AddFile, list[int]]] = {}
    steps: list[Callable[[], list]] = []
    for i in range(4):

        def append(i: int = i) -> list:
            ids = [10 * i, 10 * i + 1]
            f = put_parquet(table, f"p={'ab'[i % 2]}/part-{i}.parquet", ids, "ab"[i % 2])
            live[f.path] = (f, ids)
            return [f]

        steps.append(append)
    steps.insert(3, lambda: [drop(live.pop("p=a/part-0.parquet")[0])])
    for step in steps:
        table.transaction().commit(step(), "WRITE")
        expected_ids.append(sorted(i for _, ids in live.values() for i in ids))
    for version in range(1, len(expected_ids)):
        assert delta_rs_paths(url, options, version) == set(table.snapshot(version).file_paths()), f"version {version}"
        assert delta_rs_ids(url, options, version) == expected_ids[version], f"version {version}"


# --------------------------------------------------------------------------- concurrency


def test_the_second_conditional_put_is_refused(moto_s3: MotoServer) -> None:
    bucket = moto_s3.new_bucket("cas")
    with pytest.raises(ClientError) as refused:  # the server itself, through boto3
        for _ in range(2):
            moto_s3.client().put_object(Bucket=bucket, Key="k", Body=b"x", IfNoneMatch="*")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    storage = Table(f"s3://{bucket}/t", storage_options=moto_s3.options).storage
    storage.put_if_absent(f"s3://{bucket}/t/v", b"first")
    with pytest.raises(FileExistsError):
        storage.put_if_absent(f"s3a://{bucket}/t/v", b"second")
    assert storage.read(f"s3://{bucket}/t/v") == b"first"


def test_a_table_built_again_at_the_same_key_is_never_read_from_the_log_cache(
    moto_s3: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S3's one-second ``Last-Modified``: a table deleted and written again within the second, with
    commits of the same sizes, is read as itself (the cache keys commits on their ETags too). The
    listing's times are pinned to one second, as two quick writes see them, whatever the machine's speed."""
    bucket = moto_s3.new_bucket("rebuilt")
    url = f"s3://{bucket}/t"
    listed = ObjectStoreStorage.list_from

    def one_second(self: ObjectStoreStorage, path: str) -> Iterator[FileStatus]:
        return (replace(status, modification_time=1_600_000_000_000) for status in listed(self, path))

    monkeypatch.setattr(ObjectStoreStorage, "list_from", one_second)
    built = []
    for name in ("one", "two"):
        for key in moto_s3.keys(bucket, "t/"):
            moto_s3.client().delete_object(Bucket=bucket, Key=key)
        table = Table(url, storage_options=moto_s3.options)
        create(table)
        table.transaction().commit([put_parquet(table, f"p=a/{name}.parquet", [1])], "WRITE")
        sizes = [f.size for f in table.storage.list_from(f"{url}/_delta_log/0") if f.path.endswith(".json")]
        built.append((sizes, Table(url, storage_options=moto_s3.options).snapshot().file_paths()))
    assert built[0][0] == built[1][0], "the same sizes, or no test"
    assert [paths for _, paths in built] == [["p=a/one.parquet"], ["p=a/two.parquet"]]


def test_a_commit_that_loses_the_race_rebases_or_conflicts(moto_s3: MotoServer) -> None:
    url = f"s3://{moto_s3.new_bucket('race')}/t"
    table = Table(url, storage_options=moto_s3.options)
    create(table)
    blind = table.transaction()
    reader = table.transaction(SER)
    reader.mark_read_whole_table()
    table.transaction().commit([add("p=b/winner.parquet", "b")], "WRITE")
    result = blind.commit([add("p=a/blind.parquet")], "WRITE")  # version 1 taken: 412, then rebase
    assert (result.version, result.attempts) == (2, 2)
    with pytest.raises(ConcurrentAppendException, match=table.root):
        reader.commit([add("p=a/reader.parquet")], "WRITE")
    assert set(table.snapshot().file_paths()) == {"p=b/winner.parquet", "p=a/blind.parquet"}
    assert table.snapshot().version == 2


def test_parallel_processes_append_to_one_s3_table_and_lose_nothing(
    moto_s3: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four processes, configured by the environment alone, race on the same versions."""
    bucket = moto_s3.new_bucket("parallel")
    for key, value in moto_s3.env.items():
        monkeypatch.setenv(key, value)
    root = f"s3://{bucket}/t"
    create(Table(root))
    workers, per_worker = 4, 5
    events = race_appenders(root, workers, per_worker, tmp_path, timeout=120)
    total = workers * per_worker
    assert len(events) == total
    assert sorted(e["version"] for e in events) == list(range(1, total + 1))
    assert commit_keys(moto_s3, bucket, "t") == list(range(total + 1))
    logged = [a["add"]["path"] for v in range(1, total + 1) for a in read_commit(moto_s3, bucket, "t", v) if "add" in a]
    assert sorted(logged) == sorted(e["path"] for e in events)  # each append exactly once
    assert set(Table(root).snapshot().file_paths()) == set(logged)
    print(f"{total} commits by {workers} processes took {sum(e['attempts'] for e in events)} attempts")


# --------------------------------------------------------------------------- faults


@pytest.fixture(scope="module")
def authenticating_moto(tmp_path_factory: pytest.TempPathFactory) -> MotoServer:
    """A moto server that checks signatures after its first four (setup) requests."""
    server = start_moto(tmp_path_factory.mktemp("moto-auth"), {"INITIAL_NO_AUTH_ACTION_COUNT": "4"})
    import boto3

    iam = boto3.client(
        "iam", endpoint_url=server.endpoint, aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1"
    )
    iam.create_user(UserName="delta")
    key = iam.create_access_key(UserName="delta")["AccessKey"]
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_user_policy(UserName="delta", PolicyName="all", PolicyDocument=json.dumps(policy))
    server.access_key, server.secret_key = key["AccessKeyId"], key["SecretAccessKey"]
    server.client().create_bucket(Bucket="secured")
    yield server
    server.stop()


def test_wrong_credentials_are_a_clear_error_naming_the_table(authenticating_moto: MotoServer) -> None:
    url = "s3://secured/t"
    create(Table(url, storage_options=authenticating_moto.options))
    assert Table(url, storage_options=authenticating_moto.options).snapshot().version == 0
    for wrong in ({"aws_secret_access_key": "wrong"}, {"aws_access_key_id": "AKIAUNKNOWN"}):
        with pytest.raises(StorageError, match=rf"^{url}: cannot read .*access to S3 bucket 'secured' was denied"):
            Table(url, storage_options={**authenticating_moto.options, **wrong}).snapshot()
    env = {**authenticating_moto.env, "AWS_SECRET_ACCESS_KEY": "wrong"}
    result = CliRunner().invoke(cli, ["describe", url], env=env)
    assert result.exit_code == 1 and f"Error: {url}: " in result.output and "denied" in result.output


def test_missing_bucket_is_a_clear_error_naming_the_table(moto_s3: MotoServer) -> None:
    url = f"s3://missing-{uuid.uuid4().hex[:8]}/t"
    table = Table(url, storage_options=moto_s3.options)
    with pytest.raises(StorageError, match=rf"^{url}: .*S3 bucket 'missing-\w+' does not exist"):
        table.snapshot()
    with pytest.raises(StorageError, match=rf"^{url}: .*does not exist"):
        create(table)


def test_unreachable_endpoint_is_a_clear_error_within_seconds(moto_s3: MotoServer) -> None:
    options = {**moto_s3.options, "aws_endpoint_url": f"http://127.0.0.1:{free_port()}", "max_retries": "2"}
    started = time.monotonic()
    with pytest.raises(StorageError, match=r"^s3://b-x/t: .*cannot reach the endpoint"):
        Table("s3://b-x/t", storage_options=options).snapshot()
    assert time.monotonic() - started < 10


@pytest.fixture
def proxied(moto_s3: MotoServer):
    """A table on moto reached through a proxy the test can cut."""
    proxy = CuttableProxy(int(moto_s3.endpoint.rsplit(":", 1)[1]))
    bucket = moto_s3.new_bucket("outage")
    options = {**moto_s3.options, "aws_endpoint_url": proxy.endpoint, "max_retries": "1", "retry_timeout": "2s"}
    table = Table(f"s3://{bucket}/t", storage_options=options)
    create(table)
    table.transaction().commit([add("p=a/one.parquet")], "WRITE")
    yield table, proxy, bucket
    proxy.close()


def _on_commit_put(monkeypatch: pytest.MonkeyPatch, table: Table, action: Callable[[Callable[[], None]], None]) -> None:
    real = table.storage.put_if_absent

    def put_if_absent(path: str, data: bytes) -> None:
        if path.endswith(".json"):
            action(lambda: real(path, data))
        else:
            real(path, data)

    monkeypatch.setattr(table.storage, "put_if_absent", put_if_absent)


def test_store_down_before_the_commit_lands_leaves_the_last_version(
    moto_s3: MotoServer, proxied, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, proxy, bucket = proxied

    def outage_then_put(put: Callable[[], None]) -> None:
        proxy.cut()  # the store goes away just as the commit is sent
        put()

    _on_commit_put(monkeypatch, table, outage_then_put)
    with pytest.raises(
        StorageError, match=rf"^{table.root}: cannot write .*00000000000000000002\.json: cannot reach the endpoint"
    ):
        table.transaction().commit([add("p=a/two.parquet")], "WRITE")
    proxy.restore()
    monkeypatch.undo()
    assert commit_keys(moto_s3, bucket, "t") == [0, 1]
    assert (table.snapshot().version, table.snapshot().file_paths()) == (1, ["p=a/one.parquet"])
    assert table.transaction().commit([add("p=a/two.parquet")], "WRITE").version == 2


def test_store_down_after_the_commit_landed_reads_the_whole_commit(
    moto_s3: MotoServer, proxied, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, proxy, bucket = proxied

    def put_then_outage(put: Callable[[], None]) -> None:
        put()
        proxy.cut()  # the answer is lost with the connection: the writer cannot tell
        raise OSError("connection reset before the response")

    _on_commit_put(monkeypatch, table, put_then_outage)
    with pytest.raises(OSError, match="connection reset") as raised:
        table.transaction().commit([add("p=a/two.parquet")], "WRITE")
    assert any(table.root in note and "unknown" in note for note in raised.value.__notes__)
    proxy.restore()
    assert commit_keys(moto_s3, bucket, "t") == [0, 1, 2]
    assert [a for a in read_commit(moto_s3, bucket, "t", 2) if "add" in a][0]["add"]["path"] == "p=a/two.parquet"
    assert sorted(table.snapshot().file_paths()) == ["p=a/one.parquet", "p=a/two.parquet"]


# --------------------------------------------------------------------------- the CLI


def test_cli_on_s3_reads_credentials_from_the_environment(moto_s3: MotoServer) -> None:
    bucket = moto_s3.new_bucket("cli")
    url = f"s3://{bucket}/t"
    table = Table(url, storage_options=moto_s3.options)
    create(table)
    first = put_parquet(table, "p=a/1.parquet", [1])
    table.transaction().commit([first], "WRITE")
    table.transaction().commit([drop(first), put_parquet(table, "p=a/2.parquet", [2])], "WRITE")
    orphan = put_parquet(table, "p=a/orphan.parquet", [3])
    runner = CliRunner(env=moto_s3.env)

    def run(*args: str) -> str:
        result = runner.invoke(cli, list(args))
        assert result.exit_code == 0, result.output
        return result.stdout  # vacuum's dry run says how much it would delete on stderr

    assert run("files", f"s3a://{bucket}/t").split() == ["p=a/2.parquet"]
    assert run("files", url, "--version", "1").split() == ["p=a/1.parquet"]
    facts = json.loads(run("describe", url, "--json"))
    assert (facts["location"], facts["version"], facts["numFiles"]) == (url, 2, 1)
    assert [row["version"] for row in json.loads(run("history", url, "--json"))] == [2, 1, 0]
    dry = run("vacuum", url, "--retain-hours", "0", "--no-retention-check", "--dry-run").split()
    assert dry == [] or set(dry) <= {f"{url}/p=a/1.parquet", f"{url}/{orphan.path}"}  # by age: LastModified has 1 s steps
    restored = json.loads(run("restore", url, "--version", "1", "--json"))
    assert restored["numRestoredFiles"] == 1 and table.snapshot().file_paths() == ["p=a/1.parquet"]
    options_only = CliRunner(env={k: "" for k in moto_s3.env}).invoke(
        cli, [*(a for k, v in moto_s3.options.items() for a in ("-o", f"{k}={v}")), "files", url]
    )
    assert options_only.exit_code == 0 and options_only.output.split() == ["p=a/1.parquet"], options_only.output


def test_cli_does_not_import_pyspark_for_object_store_urls(moto_s3: MotoServer) -> None:
    url = f"s3://{moto_s3.new_bucket('nospark')}/t"
    create(Table(url, storage_options=moto_s3.options))
    probe = (
        "import sys\nfrom sparkdelta.cli import main\n"
        "try:\n    main(['describe', sys.argv[1]])\n"
        "finally:\n    print('pyspark imported' if 'pyspark' in sys.modules else 'no pyspark', file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, url], env={**os.environ, **moto_s3.env}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "version:           0" in done.stdout
    assert done.stderr.strip().endswith("no pyspark"), done.stderr


# --------------------------------------------------------------------------- Azure (Azurite)


@pytest.mark.parametrize("spelling", ["az://{c}/t", "abfs://{c}@devstoreaccount1.dfs.core.windows.net/t"])
def test_round_trip_and_conditional_create_on_azurite(azurite, spelling: str) -> None:
    container = azurite.new_container("delta")
    url = spelling.format(c=container)
    table = Table(url, storage_options=azurite.options)
    create(table, {"delta.checkpointInterval": "2"})
    a = put_parquet(table, "p=a/a.parquet", [1])
    table.transaction().commit([a], "WRITE")
    loser = table.transaction()
    table.transaction().commit([put_parquet(table, "p=a/b.parquet", [2])], "WRITE")
    assert loser.commit([put_parquet(table, "p=a/c.parquet", [3])], "WRITE").attempts == 2  # 409 from Azure, then rebase
    table.transaction().commit([drop(a)], "DELETE")
    with pytest.raises(FileExistsError):
        table.storage.put_if_absent(f"{table.root}/_delta_log/{1:020d}.json", b"{}")
    other = Table(f"az://{container}/t", storage_options=azurite.options)  # the other spelling: same objects
    assert other.snapshot().version == table.snapshot().version == 4
    assert table.snapshot().segment.checkpoint_version == 4
    assert set(other.snapshot().file_paths()) == {"p=a/b.parquet", "p=a/c.parquet"}
    assert set(other.snapshot(2).file_paths()) == {"p=a/a.parquet", "p=a/b.parquet"}
    plan = plan_vacuum(table, 0, check_retention=False, now_ms=now_ms() + 5_000)
    assert [f.path for f in plan.files] == [f"{table.root}/p=a/a.parquet"]
    execute_vacuum(table, plan)
    assert not table.storage.exists(f"{table.root}/p=a/a.parquet") and table.storage.exists(f"{table.root}/p=a/b.parquet")
    assert delta_rs_ids(f"az://{container}/t", azurite.options) == [2, 3]


# --------------------------------------------------------------------------- stores without conditional writes

_NOT_IMPLEMENTED_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NotImplemented</Code><Message>A header you provided implies '
    b"functionality that is not implemented</Message><Header>If-None-Match</Header></Error>"
)


def _moto_port(server: MotoServer) -> int:
    return int(server.endpoint.rsplit(":", 1)[1])


def _refuse_if_none_match(request: HttpRequest) -> bytes | None:
    """What AWS answers to a header it does not implement, for conditional PUTs only."""
    if request.method == "PUT" and "if-none-match" in request.headers:
        head = f"HTTP/1.1 501 Not Implemented\r\nContent-Type: application/xml\r\nContent-Length: {len(_NOT_IMPLEMENTED_BODY)}\r\n\r\n"
        return head.encode() + _NOT_IMPLEMENTED_BODY
    return None


def test_unsafe_rename_and_a_locking_provider_refuse_commits_by_name(
    moto_s3: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"s3://{moto_s3.new_bucket('unsafe')}/t"
    create(Table(url, storage_options={**moto_s3.options, "aws_s3_allow_unsafe_rename": "false"}))
    cases = [
        ({"AWS_S3_ALLOW_UNSAFE_RENAME": "true"}, r"aws_s3_allow_unsafe_rename=true asks for commits without an atomic primitive"),
        (
            {"aws_s3_locking_provider": "zookeeper", "delta_dynamo_table_name": "locks"},
            r"aws_s3_locking_provider=zookeeper: only 'dynamodb' is supported",
        ),
    ]
    for extra, reason in cases:
        table = Table(url, storage_options={**moto_s3.options, **extra})
        assert table.snapshot().version == 0  # reading is unaffected
        with pytest.raises(
            StorageError, match=rf"^{url}: cannot commit: {reason}.*S3DynamoDBLogStore.*aws_s3_locking_provider=dynamodb"
        ):
            table.transaction().commit([add("p=a/x.parquet")], "WRITE")
    monkeypatch.setenv("AWS_S3_LOCKING_PROVIDER", "redis")  # read from the environment too
    with pytest.raises(StorageError, match="aws_s3_locking_provider=redis"):
        Table(url, storage_options=moto_s3.options).transaction().commit([add("p=a/x.parquet")], "WRITE")
    assert commit_keys(moto_s3, url.split("/")[2], "t") == [0]


def test_a_store_that_ignores_if_none_match_is_detected_before_any_commit(moto_s3: MotoServer) -> None:
    bucket = moto_s3.new_bucket("no-cas")
    proxy = RecordingProxy(_moto_port(moto_s3), drop_headers=["If-None-Match"])
    try:
        options = {**moto_s3.options, "aws_endpoint_url": proxy.endpoint}
        storage = ObjectStoreStorage("s3", f"s3://{bucket}/t", options)
        # the danger: behind this server, both conditional creates of one key succeed
        for body in (b"first", b"second"):
            obstore.put(storage._store(parse_url(f"s3://{bucket}/k")), "k", body, mode="create", use_multipart=False)
        assert moto_s3.client().get_object(Bucket=bucket, Key="k")["Body"].read() == b"second"
        table = Table(f"s3://{bucket}/t", storage_options=options)
        with pytest.raises(
            StorageError,
            match=rf"^s3://{bucket}/t: cannot commit: S3 bucket '{bucket}' does not support conditional writes \(it overwrote",
        ):
            create(table)
        assert moto_s3.keys(bucket, "t/") == []  # no commit, and the probe is gone
    finally:
        proxy.close()


def test_a_store_that_refuses_if_none_match_is_a_clear_error(moto_s3: MotoServer) -> None:
    bucket = moto_s3.new_bucket("cas-501")
    proxy = RecordingProxy(_moto_port(moto_s3), answer=_refuse_if_none_match)
    try:
        table = Table(
            f"s3://{bucket}/t", storage_options={**moto_s3.options, "aws_endpoint_url": proxy.endpoint, "max_retries": "1"}
        )
        with pytest.raises(StorageError, match=r"does not support conditional writes \(.*501 Not Implemented.*DynamoDB"):
            create(table)
        assert moto_s3.keys(bucket) == []
    finally:
        proxy.close()


def test_conditional_put_disabled_by_option_is_a_clear_error(moto_s3: MotoServer) -> None:
    url = f"s3://{moto_s3.new_bucket('cas-off')}/t"
    with pytest.raises(StorageError, match=rf"^{url}: cannot commit: .*does not support conditional writes.*S3DynamoDBLogStore"):
        create(Table(url, storage_options={**moto_s3.options, "aws_conditional_put": "disabled"}))


def test_the_conditional_write_probe_runs_once_per_bucket(moto_s3: MotoServer) -> None:
    bucket = moto_s3.new_bucket("probe")
    proxy = RecordingProxy(_moto_port(moto_s3))
    try:
        table = Table(f"s3://{bucket}/t", storage_options={**moto_s3.options, "aws_endpoint_url": proxy.endpoint})
        create(table)
        writes = [
            (r.method, "write-probe" in r.target, "if-none-match" in r.headers)
            for r in proxy.take()
            if r.method in ("PUT", "POST", "DELETE")
        ]
        assert writes == [
            ("PUT", True, True),
            ("PUT", True, True),
            ("POST", False, False),
            ("PUT", False, True),
            ("PUT", False, True),
        ]  # POST ?delete: the probe; then the commit and its checksum
        Table(table.root, storage_options={**moto_s3.options, "aws_endpoint_url": proxy.endpoint}).transaction().commit(
            [add("p=a/x.parquet")], "WRITE"
        )
        assert not [r for r in proxy.take() if "write-probe" in r.target or "?delete" in r.target]
        assert moto_s3.keys(bucket) == [f"t/_delta_log/{v:020d}.{kind}" for v in (0, 1) for kind in ("crc", "json")]
    finally:
        proxy.close()


# --------------------------------------------------------------------------- listing


def test_time_travel_lists_only_the_pages_up_to_its_version(moto_s3: MotoServer) -> None:
    """S3 lists 1,000 keys a page; version 1 of a 1,200-commit log needs the first page only."""
    bucket = moto_s3.new_bucket("pages")
    table = Table(f"s3://{bucket}/t", storage_options=moto_s3.options)
    create(table)
    table.transaction().commit([add("p=a/one.parquet")], "WRITE")
    commit = table.storage.read(f"{table.log_dir}/{1:020d}.json")
    store = table.storage._store(parse_url(table.root))
    with ThreadPoolExecutor(8) as pool:  # later versions, uploaded as they are (not committed: faster)
        list(pool.map(lambda v: obstore.put(store, f"t/_delta_log/{v:020d}.json", commit), range(2, 1200)))
    proxy = RecordingProxy(_moto_port(moto_s3))
    try:
        counted = Table(table.root, storage_options={**moto_s3.options, "aws_endpoint_url": proxy.endpoint})
        assert counted.snapshot(1).file_paths() == ["p=a/one.parquet"]
        assert sum("list-type=2" in r.target for r in proxy.take()) == 1
        assert counted.snapshot().version == 1199  # the latest still lists every page
        assert sum("list-type=2" in r.target for r in proxy.take()) == 2
    finally:
        proxy.close()


def test_a_listing_out_of_name_order_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    storage = ObjectStoreStorage("s3", "s3://b/t", {})
    meta = {"size": 1, "last_modified": datetime.now(UTC)}
    monkeypatch.setattr(
        storage, "_list", lambda *_: iter([("00000000000000000001.json", meta), ("00000000000000000000.json", meta)])
    )
    with pytest.raises(StorageError, match=r"^s3://b/t: S3 bucket 'b' listed s3://b/t/_delta_log out of name order"):
        list(storage.list_from("s3://b/t/_delta_log/00000000000000000000"))


def test_a_remote_snapshot_reads_its_log_files_at_once(tmp_path: Path) -> None:
    """Each read of a store without local files waits 0.2 s: nine commits and a
    checkpoint take one wait, not ten, and the state is the local one."""
    table = Table(str(tmp_path))
    create(table, {"delta.checkpointInterval": "10"})
    for i in range(19):
        table.transaction().commit([add(f"p=a/{i}.parquet")], "WRITE")

    class SlowRemote(LocalStorage):
        def local_path(self, path: str) -> str | None:
            return None

        def read(self, path: str) -> bytes:
            time.sleep(0.2)
            return super().read(path)

    remote = Table(str(tmp_path), storage=SlowRemote())
    clear_log_cache()
    started = time.monotonic()
    snapshot = remote.snapshot()
    assert time.monotonic() - started < 1.0  # sequential: 11 reads x 0.2 s
    assert len(snapshot.segment.deltas) == 9 and snapshot.segment.checkpoint_version == 10
    assert sorted(snapshot.file_paths()) == sorted(table.snapshot().file_paths())
