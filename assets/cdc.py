"""A deterministic change feed for the example shop: the same day always yields the same events."""

import random
from datetime import date, datetime, timedelta

import pyarrow as pa

ORDERS_PER_DAY = 400
STATUSES = ("created", "paid", "shipped", "delivered")

ORDER_EVENTS = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("order_id", pa.int64(), nullable=False),
        pa.field("customer_id", pa.int64()),
        pa.field("status", pa.string()),
        pa.field("amount", pa.float64()),
        pa.field("updated_at", pa.timestamp("us")),
        pa.field("_row_kind", pa.string(), nullable=False),
    ]
)


def _day_number(day: str) -> int:
    """Days since 2024-01-01: ids stay unique across days."""
    return (date.fromisoformat(day) - date(2024, 1, 1)).days


def order_events(day: str) -> pa.Table:
    """One day's CDC log of orders: inserts, status updates (-U/+U pairs) and cancellations (-D)."""
    rng = random.Random(f"orders-{day}")
    start = datetime.fromisoformat(day)
    base_id = _day_number(day) * 100_000
    rows = []
    for i in range(ORDERS_PER_DAY):
        order = {
            "dt": day,
            "order_id": base_id + i,
            "customer_id": rng.randrange(1, 2_000),
            "status": "created",
            "amount": round(rng.uniform(5, 500), 2),
            "updated_at": start + timedelta(seconds=rng.randrange(0, 3600)),
        }
        rows.append({**order, "_row_kind": "+I"})
        for status in STATUSES[1 : 1 + rng.randrange(0, len(STATUSES))]:
            before = dict(order)
            order = {
                **order,
                "status": status,
                "updated_at": order["updated_at"] + timedelta(hours=2),
            }
            rows.append({**before, "_row_kind": "-U"})
            rows.append({**order, "_row_kind": "+U"})
        if rng.random() < 0.05:
            rows.append({**order, "_row_kind": "-D"})
    return pa.Table.from_pylist(rows, schema=ORDER_EVENTS)


def expected_orders(day: str) -> list[dict]:
    """The orders of a day after its events: what a deduplicate table must read back."""
    state: dict[int, dict] = {}
    for row in order_events(day).to_pylist():
        kind = row.pop("_row_kind")
        if kind in ("-U", "-D"):
            state.pop(row["order_id"], None)
        else:
            state[row["order_id"]] = row
    return sorted(state.values(), key=lambda r: r["order_id"])
