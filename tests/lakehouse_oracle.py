"""What the lakehouse tables should hold, worked out with pandas from the landing CSV files alone.

An independent restatement of the pipeline's rules (it shares no code with
``sparkdelta.lakehouse``): type and validate each line, keep the latest valid line of
each ride (files in name order, then line order), aggregate the result per day. Amounts
are ``Decimal`` throughout, so the gold comparison is exact.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pandas as pd
import pyarrow as pa
from deltalake import DeltaTable

MONEY = [
    "TotalAmount",
    "FareAmount",
    "Extra",
    "MtaTax",
    "TipAmount",
    "TollsAmount",
    "ImprovementSurcharge",
    "CongestionSurcharge",
]
INTEGERS = ["VendorId", "PickupLocationId", "DropLocationId", "PassengerCount", "RateCodeId", "PaymentType"]
REQUIRED = [*INTEGERS, "TripDistance", *[m for m in MONEY if m != "CongestionSurcharge"]]
CARD = 1


def landing_lines(landing: Path) -> pd.DataFrame:
    """Every data line of every landing file as text, with its file name and position."""
    landing = Path(str(landing))
    frames = []
    for order, path in enumerate(sorted(landing.glob("*.csv"))):
        lines = pd.read_csv(path, dtype=str, keep_default_na=False)
        lines["_file"], lines["_order"], lines["_pos"] = path.name, order, range(len(lines))
        frames.append(lines)
    lines = pd.concat(frames, ignore_index=True)
    return lines.fillna({"CongestionSurcharge": ""})


def _number(text: pd.Series) -> pd.Series:
    return pd.to_numeric(text.where(text != ""), errors="coerce")


def reasons(lines: pd.DataFrame) -> pd.Series:
    """Why each line is invalid (None when valid), in the pipeline's order of checks."""
    ride = _number(lines["RideId"])
    pickup = pd.to_datetime(lines["PickupTime"], format="%Y-%m-%d %H:%M:%S", errors="coerce")
    drop = pd.to_datetime(lines["DropTime"], format="%Y-%m-%d %H:%M:%S", errors="coerce")
    numbers = {c: _number(lines[c]) for c in [*INTEGERS, "TripDistance", *MONEY]}
    malformed = pd.concat([(lines[c] != "") & numbers[c].isna() for c in numbers], axis=1).any(axis=1)
    missing = pd.concat([numbers[c].isna() for c in REQUIRED], axis=1).any(axis=1)
    negative = pd.concat([numbers[c] < 0 for c in [*MONEY, "TripDistance", "PassengerCount"]], axis=1).any(axis=1)
    out = pd.Series([None] * len(lines), index=lines.index, dtype=object)
    out[negative] = "negative_amount"
    out[malformed | missing] = "bad_number"
    out[pickup.isna() | drop.isna() | (drop < pickup)] = "bad_timestamp"
    out[ride.isna() | (ride != ride.round())] = "missing_ride_id"
    return out


def expected_silver(lines: pd.DataFrame) -> pd.DataFrame:
    """The latest valid line of each ride, typed (amounts as Decimal)."""
    valid = lines[reasons(lines).isna()].sort_values(["_order", "_pos"])
    latest = valid.drop_duplicates("RideId", keep="last").copy()
    latest["RideId"] = latest["RideId"].astype("int64")
    for column in INTEGERS:
        latest[column] = latest[column].astype("int64")
    for column in [*MONEY, "TripDistance"]:
        latest[column] = latest[column].map(lambda text: Decimal(text) if text != "" else None)
    latest["PickupTime"] = pd.to_datetime(latest["PickupTime"], format="%Y-%m-%d %H:%M:%S")
    latest["PickupDate"] = latest["PickupTime"].dt.date
    latest["PickupHour"] = latest["PickupTime"].dt.hour
    return latest.set_index("RideId", drop=False).sort_index()


def _sums(rows: pd.DataFrame, keys: list[str], measures: dict[str, str]) -> dict[tuple, dict]:
    out = {}
    for key, group in rows.groupby(keys):
        values: dict = {"trips": len(group)}
        for name, column in measures.items():
            values[name] = sum(group[column], Decimal(0)) if column != "PassengerCount" else int(group[column].sum())
        out[key] = values
    return out


def expected_gold(silver: pd.DataFrame) -> dict[str, dict[tuple, dict]]:
    """Every gold table as {key tuple: {column: value}}, recomputed from ``silver`` in full."""
    vendor = {
        "passengers": "PassengerCount",
        "distance": "TripDistance",
        "fares": "FareAmount",
        "tips": "TipAmount",
        "revenue": "TotalAmount",
    }
    tips = _sums(
        silver[silver["PaymentType"] == CARD], ["PickupDate", "PickupHour"], {"fares": "FareAmount", "tips": "TipAmount"}
    )
    for values in tips.values():
        values["tip_pct"] = (
            (values["tips"] * 100 / values["fares"]).quantize(Decimal("0.01"), ROUND_HALF_UP) if values["fares"] else None
        )
    return {
        "daily_vendor": _sums(silver, ["PickupDate", "VendorId"], vendor),
        "daily_zone": _sums(silver, ["PickupDate", "PickupLocationId"], {"revenue": "TotalAmount"}),
        "daily_payment": _sums(silver, ["PickupDate", "PaymentType"], {"revenue": "TotalAmount"}),
        "tips_by_hour": tips,
    }


GOLD_KEYS = {
    "daily_vendor": ["PickupDate", "VendorId"],
    "daily_zone": ["PickupDate", "PickupLocationId"],
    "daily_payment": ["PickupDate", "PaymentType"],
    "tips_by_hour": ["PickupDate", "PickupHour"],
}


def deltalake_rows(path: Path, version: int | None = None) -> list[dict]:
    """A table's rows as delta-rs reads them."""
    return DeltaTable(str(path), version=version).to_pyarrow_table().to_pylist()


def keyed(rows: list[dict], keys: list[str]) -> dict[tuple, dict]:
    return {tuple(r[k] for k in keys): {c: v for c, v in r.items() if c not in keys} for r in rows}


def as_multiset(table: pa.Table, drop: tuple[str, ...] = ()) -> dict[tuple, int]:
    """Rows (all columns but ``drop``, in name order) counted, for order-free comparison."""
    columns = sorted(c for c in table.column_names if c not in drop)
    counts: dict[tuple, int] = {}
    for row in table.select(columns).to_pylist():
        key = tuple(row[c] for c in columns)
        counts[key] = counts.get(key, 0) + 1
    return counts
