"""moto's server (``moto_server``), with DynamoDB's requests served one at a time.

moto's ``PutItem`` reads the item, evaluates its ``ConditionExpression`` and then writes,
with no lock between them (``moto/dynamodb/models/table.py``), on a threaded server: two
racing conditional puts can both succeed, which DynamoDB never lets happen. The DynamoDB
commit table's ``attribute_not_exists(fileName)`` is what makes a version one writer's, so
its tests need the real service's atomic conditional write. S3's requests stay concurrent.
Usage as ``moto_server``'s: ``python tests/moto_server.py -H 127.0.0.1 -p PORT``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import moto.server
from moto.moto_server.werkzeug_app import DomainDispatcherApplication


class DynamoDbInTurn(DomainDispatcherApplication):
    """moto's WSGI application, holding one lock over each DynamoDB request's whole handling."""

    _dynamodb = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            with self._dynamodb:
                return list(super().__call__(environ, start_response))  # the body made under the lock
        return super().__call__(environ, start_response)


if __name__ == "__main__":
    moto.server.DomainDispatcherApplication = DynamoDbInTurn  # type: ignore[misc]
    moto.server.main()
