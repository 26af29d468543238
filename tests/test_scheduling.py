"""The order pytest-xdist's workers get the test files in (``tests/scheduling.py``)."""

from __future__ import annotations

import scheduling
from timing import REPO


def test_files_go_out_longest_first_by_the_reference_seconds_not_by_their_tests() -> None:
    units = {
        "many_short.py": [f"many_short.py::test_{i}" for i in range(50)],
        "few_long.py": ["few_long.py::test_a", "few_long.py::test_b"],
        "middle.py": ["middle.py::test_a"],
    }
    seconds = {"many_short.py": 20.0, "few_long.py": 240.0, "middle.py": 60.0}
    assert scheduling.longest_first(units, seconds) == ["few_long.py", "middle.py", "many_short.py"]


def test_a_file_the_reference_does_not_know_is_estimated_by_its_tests() -> None:
    units = {"new.py": [f"new.py::test_{i}" for i in range(30)], "known.py": ["known.py::test"]}
    per_test = scheduling.UNKNOWN_SECONDS_PER_TEST
    assert scheduling.longest_first(units, {"known.py": 31 * per_test}) == ["known.py", "new.py"]
    assert scheduling.longest_first(units, {"known.py": 29 * per_test}) == ["new.py", "known.py"]


def test_the_files_sharing_a_fixture_are_one_unit_summing_their_seconds() -> None:
    first, second = list(scheduling.SHARING)
    assert scheduling.unit_of(f"{first}::test_x") == scheduling.unit_of(f"{second}::test_y[1]")
    assert scheduling.unit_of("tests/spark/test_session.py::test_x") == "tests/spark/test_session.py"
    unit = scheduling.unit_of(first)
    units = {unit: [f"{first}::a", f"{second}::b"], "other.py": ["other.py::c"]}
    assert scheduling.longest_first(units, {first: 60.0, second: 60.0, "other.py": 100.0}) == [unit, "other.py"]


def test_the_shared_files_exist_and_use_the_fixture_they_are_grouped_by() -> None:
    for path, fixture in scheduling.SHARING.items():
        assert fixture in (REPO / path).read_text(), f"{path} no longer uses {fixture}"
