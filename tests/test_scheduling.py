"""Which test files pytest-xdist's workers get together (``tests/scheduling.py``)."""

from __future__ import annotations

import scheduling
from timing import REPO


def test_the_files_sharing_a_fixture_are_one_unit_and_the_others_one_each() -> None:
    first, second = list(scheduling.SHARING)
    assert scheduling.unit_of(f"{first}::test_x") == scheduling.unit_of(f"{second}::test_y[1]")
    assert scheduling.unit_of(f"{first}::test_x") != first
    assert scheduling.unit_of("tests/spark/test_session.py::test_x") == "tests/spark/test_session.py"
    assert scheduling.unit_of("tests/spark/test_session.py::Class::test_x[a::b]") == "tests/spark/test_session.py"


def test_the_shared_files_exist_and_use_the_fixture_they_are_grouped_by() -> None:
    for path, fixture in scheduling.SHARING.items():
        assert fixture in (REPO / path).read_text(), f"{path} no longer uses {fixture}"
