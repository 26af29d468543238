"""``lakehouse report``: one static HTML page with charts of the gold tables and table health.

The page needs no network: the data is embedded as JSON and a small inline script draws
the charts as SVG, so it opens from disk, from a CI artifact or in a headless browser.
The health panel comes from the logs (kernel snapshots and history): version, files,
size, and each table's last operations with their metrics.
"""

from __future__ import annotations

import html
import json
import os
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import markers
from .trips import PAYMENT_TYPES
from .warehouse import Location, Warehouse, storage_at, table_at

TOP_ZONES = 15
HISTORY = 5
VENDORS = {1: "Creative Mobile Technologies", 2: "VeriFone"}
# TLC taxi zone names of the zones the generator makes busy.
ZONE_NAMES = {
    237: "Upper East Side South",
    161: "Midtown Center",
    236: "Upper East Side North",
    162: "Midtown East",
    230: "Times Sq/Theatre District",
    186: "Penn Station/Madison Sq West",
    142: "Lincoln Square East",
    170: "Murray Hill",
    48: "Clinton East",
    234: "Union Sq",
    163: "Midtown North",
    239: "Upper West Side South",
    79: "East Village",
    141: "Lenox Hill West",
    68: "East Chelsea",
    107: "Gramercy",
    263: "Yorkville West",
    140: "Lenox Hill East",
    238: "Upper West Side North",
    164: "Midtown South",
    249: "West Village",
    100: "Garment District",
    90: "Flatiron",
    113: "Greenwich Village North",
    43: "Central Park",
    246: "West Chelsea/Hudson Yards",
    137: "Kips Bay",
    229: "Sutton Place/Turtle Bay North",
    233: "UN/Turtle Bay South",
    114: "Greenwich Village South",
    132: "JFK Airport",
    138: "LaGuardia Airport",
}
METRICS_SHOWN = (
    "numOutputRows",
    "numTargetRowsInserted",
    "numTargetRowsUpdated",
    "numTargetRowsDeleted",
    "numFilesAdded",
    "numFilesRemoved",
    "numDeletedFiles",
)


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    """Small results as JSON-ready dicts (decimals as floats, dates as ISO text)."""
    out = []
    for row in df.collect():
        item = {}
        for key, value in row.asDict().items():
            if hasattr(value, "isoformat"):
                value = value.isoformat()
            elif value is not None and not isinstance(value, int | str):
                value = float(value)
            item[key] = value
        out.append(item)
    return out


def chart_data(spark: SparkSession, warehouse: Warehouse) -> dict[str, Any]:
    def gold(name: str) -> DataFrame:
        return spark.read.format("delta").load(str(warehouse.gold(name)))

    vendor = gold("daily_vendor").select("PickupDate", "VendorId", "revenue", "trips").orderBy("PickupDate", "VendorId")
    payment = gold("daily_payment").select("PickupDate", "PaymentType", "trips").orderBy("PickupDate", "PaymentType")
    zones = (
        gold("daily_zone")
        .groupBy("PickupLocationId")
        .agg(F.sum("revenue").alias("revenue"), F.sum("trips").alias("trips"))
        .orderBy(F.desc("revenue"), "PickupLocationId")
        .limit(TOP_ZONES)
    )
    tips = (
        gold("tips_by_hour")
        .groupBy("PickupHour")
        .agg((F.sum("tips") * 100 / F.sum("fares")).alias("tip_pct"), F.sum("trips").alias("trips"))
        .orderBy("PickupHour")
    )
    totals = gold("daily_vendor").agg(
        F.sum("trips").alias("trips"), F.sum("revenue").alias("revenue"), F.countDistinct("PickupDate").alias("days")
    )
    return {
        "vendors": {str(k): v for k, v in VENDORS.items()},
        "payments": {str(k): v for k, v in PAYMENT_TYPES.items()},
        "zones": {str(k): v for k, v in ZONE_NAMES.items()},
        "vendor_revenue": _rows(vendor),
        "payment_trips": _rows(payment),
        "top_zones": _rows(zones),
        "tips_by_hour": _rows(tips),
        "totals": _rows(totals)[0],
    }


def health(warehouse: Warehouse) -> list[dict[str, Any]]:
    """Per table: version, files, bytes, partitioning and the last operations from its history."""
    tables = []
    for name, path in warehouse.tables().items():
        found = markers.snapshot(path)
        if found is None:
            continue
        operations = []
        for record in table_at(path).history(limit=HISTORY):
            info = record.commit_info or {}
            metrics = {k: v for k, v in (info.get("operationMetrics") or {}).items() if k in METRICS_SHOWN}
            operations.append(
                {
                    "version": record.version,
                    "time": datetime.fromtimestamp(record.timestamp / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S"),
                    "operation": info.get("operation", "?"),
                    "metrics": metrics,
                    "note": info.get("userMetadata") or "",
                }
            )
        tables.append(
            {
                "table": name,
                "version": found.version,
                "files": found.num_files,
                "bytes": found.size_in_bytes,
                "partitioned_by": list(found.partition_columns),
                "operations": operations,
            }
        )
    return tables


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def health_html(tables: list[dict[str, Any]]) -> str:
    rows = []
    for t in tables:
        ops = "".join(
            f"<li><b>v{o['version']}</b> {html.escape(o['operation'])} <span class=muted>{o['time']}</span>"
            + (
                f" <span class=metrics>{html.escape(', '.join(f'{k}={v}' for k, v in o['metrics'].items()))}</span>"
                if o["metrics"]
                else ""
            )
            + (f" <i>{html.escape(o['note'])}</i>" if o["note"] else "")
            + "</li>"
            for o in t["operations"]
        )
        rows.append(
            f"<tr><td><code>{html.escape(t['table'])}</code></td><td class=num>{t['version']}</td>"
            f"<td class=num>{t['files']}</td><td class=num>{_size(t['bytes'])}</td>"
            f"<td>{html.escape(', '.join(t['partitioned_by']) or '-')}</td><td><ul class=ops>{ops}</ul></td></tr>"
        )
    head = "<tr><th>table</th><th>version</th><th>files</th><th>size</th><th>partitioned by</th><th>last operations</th></tr>"
    return f"<table class=health>{head}{''.join(rows)}</table>"


def render(data: dict[str, Any], tables: list[dict[str, Any]], warehouse: Warehouse) -> str:
    # "</" must not appear inside the script element.
    payload = json.dumps(data).replace("</", "<\\/")
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        PAGE.replace("@@DATA@@", payload)
        .replace("@@HEALTH@@", health_html(tables))
        .replace("@@WAREHOUSE@@", html.escape(str(warehouse.root)))
        .replace("@@GENERATED@@", generated)
    )


def write_report(spark: SparkSession, warehouse: Warehouse, output: str | os.PathLike[str] | None = None) -> Location:
    """Write the report (default ``warehouse/report.html``, beside the tables even on an object store) and return where."""
    if markers.snapshot(warehouse.gold("daily_vendor")) is None:
        raise FileNotFoundError(f"no gold tables under {warehouse.root}: run `lakehouse run` first")
    target = Location.of(output) if output is not None else warehouse.root / "report.html"
    storage, where = storage_at(target)
    storage.write(where, render(chart_data(spark, warehouse), health(warehouse), warehouse).encode("utf-8"))
    return target


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Taxi lakehouse report</title>
<style>
 body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; background: #fafafa; }
 h1 { margin: 0 0 4px; } .muted { color: #777; }
 .kpis { display: flex; gap: 16px; margin: 16px 0; }
 .kpi { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 10px 16px; }
 .kpi b { display: block; font-size: 22px; }
 .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 16px; }
 figure { margin: 0; background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 12px; }
 figcaption { font-weight: 600; margin-bottom: 6px; }
 svg.chart { width: 100%; height: auto; }
 svg.chart text { font-size: 11px; fill: #444; }
 .legend span { margin-right: 12px; } .legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
 table.health { border-collapse: collapse; width: 100%; background: #fff; margin-top: 8px; }
 table.health td, table.health th { border: 1px solid #ddd; padding: 6px 8px; vertical-align: top; text-align: left; }
 td.num { text-align: right; } ul.ops { margin: 0; padding-left: 16px; } .metrics { color: #555; font-size: 12px; }
</style></head>
<body>
<h1>Taxi lakehouse</h1>
<div class="muted">warehouse @@WAREHOUSE@@ &middot; generated @@GENERATED@@ &middot; gold tables, kept incrementally from silver's change feed</div>
<div class="kpis" id="kpis"></div>
<div class="grid">
 <figure><figcaption>Daily revenue by vendor (USD)</figcaption><div id="vendor-revenue"></div></figure>
 <figure><figcaption>Daily trips by payment type</figcaption><div id="payment-trips"></div></figure>
 <figure><figcaption>Top pickup zones by revenue (USD)</figcaption><div id="top-zones"></div></figure>
 <figure><figcaption>Card tip as a share of the fare, by pickup hour (%)</figcaption><div id="tips-by-hour"></div></figure>
</div>
<h2>Table health</h2>
@@HEALTH@@
<script id="data" type="application/json">@@DATA@@</script>
<script>
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const NS = "http://www.w3.org/2000/svg";
const COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"];

function el(name, attrs, parent, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}
function fmt(v) {
  return Math.abs(v) >= 1e6 ? (v / 1e6).toFixed(1) + "M" : Math.abs(v) >= 1e3 ? (v / 1e3).toFixed(1) + "k" : (+v).toFixed(v % 1 ? 1 : 0);
}
function legend(container, names) {
  const div = document.createElement("div");
  div.className = "legend";
  names.forEach((name, i) => { div.innerHTML += `<span><i style="background:${COLORS[i % COLORS.length]}"></i>${name}</span>`; });
  container.appendChild(div);
}

// Vertical bars: categories on x; each series a bar per category, side by side or stacked.
function columns(id, categories, series, stacked) {
  const W = 560, H = 260, L = 50, B = 40, T = 10, container = document.getElementById(id);
  const svg = el("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, "data-chart": id}, container);
  const totals = categories.map((_, i) => stacked ? series.reduce((s, x) => s + x.values[i], 0) : Math.max(...series.map(x => x.values[i])));
  const max = Math.max(1e-9, ...totals), plotH = H - B - T, slot = (W - L) / Math.max(1, categories.length);
  for (let k = 0; k <= 4; k++) {
    const y = T + plotH - plotH * k / 4;
    el("line", {x1: L, x2: W, y1: y, y2: y, stroke: "#eee"}, svg);
    el("text", {x: L - 6, y: y + 4, "text-anchor": "end"}, svg, fmt(max * k / 4));
  }
  categories.forEach((cat, i) => {
    let base = 0;
    series.forEach((s, j) => {
      const v = s.values[i], h = plotH * v / max;
      const w = stacked ? slot * 0.7 : slot * 0.8 / series.length;
      const x = L + slot * i + slot * (stacked ? 0.15 : 0.1) + (stacked ? 0 : w * j);
      const y = T + plotH - h - (stacked ? plotH * base / max : 0);
      const bar = el("rect", {class: "bar", x: x, y: y, width: Math.max(1, w - 1), height: Math.max(0, h), fill: COLORS[j % COLORS.length], "data-value": v}, svg);
      el("title", {}, bar, `${cat} · ${s.name}: ${fmt(v)}`);
      base += v;
    });
    if (categories.length <= 16 || i % Math.ceil(categories.length / 16) === 0)
      el("text", {x: L + slot * (i + 0.5), y: H - B + 14, "text-anchor": "middle"}, svg, cat);
  });
  if (series.length > 1) legend(container, series.map(s => s.name));
}

// Horizontal bars: one per label.
function rows(id, labels, values) {
  const W = 560, rowH = 16, L = 180, H = labels.length * rowH + 10, container = document.getElementById(id);
  const svg = el("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, "data-chart": id}, container);
  const max = Math.max(1e-9, ...values);
  labels.forEach((label, i) => {
    const y = 5 + i * rowH, w = (W - L - 60) * values[i] / max;
    el("text", {x: L - 6, y: y + 11, "text-anchor": "end"}, svg, label);
    const bar = el("rect", {class: "bar", x: L, y: y + 2, width: Math.max(1, w), height: rowH - 4, fill: COLORS[0], "data-value": values[i]}, svg);
    el("title", {}, bar, `${label}: ${fmt(values[i])}`);
    el("text", {x: L + w + 4, y: y + 11}, svg, fmt(values[i]));
  });
}

function pivot(records, key, seriesKey, valueKey, names) {
  const categories = [...new Set(records.map(r => r[key]))].sort();
  const ids = [...new Set(records.map(r => r[seriesKey]))].sort((a, b) => a - b);
  const series = ids.map(id => ({
    name: names[String(id)] || String(id),
    values: categories.map(c => { const r = records.find(x => x[key] === c && x[seriesKey] === id); return r ? r[valueKey] : 0; }),
  }));
  return {categories: categories.map(c => c.slice(5)), series};
}

const t = DATA.totals;
document.getElementById("kpis").innerHTML = [
  ["trips", fmt(t.trips)], ["revenue (USD)", fmt(t.revenue)], ["days", t.days],
].map(([k, v]) => `<div class="kpi"><b>${v}</b>${k}</div>`).join("");

const vendor = pivot(DATA.vendor_revenue, "PickupDate", "VendorId", "revenue", DATA.vendors);
columns("vendor-revenue", vendor.categories, vendor.series, false);
const payment = pivot(DATA.payment_trips, "PickupDate", "PaymentType", "trips", DATA.payments);
columns("payment-trips", payment.categories, payment.series, true);
rows("top-zones", DATA.top_zones.map(z => DATA.zones[String(z.PickupLocationId)] || "zone " + z.PickupLocationId), DATA.top_zones.map(z => z.revenue));
columns("tips-by-hour", DATA.tips_by_hour.map(h => String(h.PickupHour)), [{name: "tip %", values: DATA.tips_by_hour.map(h => h.tip_pct || 0)}], false);
document.body.setAttribute("data-charts-rendered", String(document.querySelectorAll("svg.chart").length));
</script>
</body></html>
"""
