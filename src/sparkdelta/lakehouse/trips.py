"""The taxi trip record: the feed's columns as they land, and the types silver gives them.

One list serves the generator (what it writes), bronze (what it expects), silver (how it
casts) and gold (what it aggregates), so a column added to the feed is added here once.
"""

from __future__ import annotations

from pyspark.sql.types import (
    DataType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
)

# Money and distances are decimals: gold's sums are then exact, so an incremental gold
# table can be compared with a full recompute for equality, not within a tolerance.
MONEY = DecimalType(10, 2)

# The book's columns (Delta Lake: Up & Running, NYC yellow taxi), in file order.
FEED_COLUMNS: dict[str, DataType] = {
    "RideId": LongType(),
    "VendorId": IntegerType(),
    "PickupTime": TimestampType(),
    "DropTime": TimestampType(),
    "PickupLocationId": IntegerType(),
    "DropLocationId": IntegerType(),
    "CabNumber": StringType(),
    "DriverLicenseNumber": StringType(),
    "PassengerCount": IntegerType(),
    "TripDistance": DecimalType(8, 2),
    "RateCodeId": IntegerType(),
    "PaymentType": IntegerType(),
    "TotalAmount": MONEY,
    "FareAmount": MONEY,
    "Extra": MONEY,
    "MtaTax": MONEY,
    "TipAmount": MONEY,
    "TollsAmount": MONEY,
    "ImprovementSurcharge": MONEY,
}

# Added to the feed from some day on (NYC's 2019 congestion surcharge): null before it.
LATE_COLUMNS: dict[str, DataType] = {"CongestionSurcharge": MONEY}

TYPED_COLUMNS: dict[str, DataType] = {**FEED_COLUMNS, **LATE_COLUMNS}

MONEY_COLUMNS = [name for name, kind in TYPED_COLUMNS.items() if kind == MONEY]

# Columns a valid trip must have; CongestionSurcharge is optional (older files lack it).
REQUIRED_NUMBERS = [
    "VendorId",
    "PickupLocationId",
    "DropLocationId",
    "PassengerCount",
    "TripDistance",
    "RateCodeId",
    "PaymentType",
    *[c for c in MONEY_COLUMNS if c not in LATE_COLUMNS],
]

TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss"

# Payment type codes of the TLC data dictionary.
PAYMENT_TYPES = {1: "Credit card", 2: "Cash", 3: "No charge", 4: "Dispute"}
CREDIT_CARD = 1
