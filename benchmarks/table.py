"""The performance table: rows of what / ours / baseline / ratio / target, as text or JSON, each target judged."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Sequence

KEYS = ("what", "ours", "baseline", "ratio", "target")
_BOUND = re.compile(r"^\s*(ratio|ours)?\s*(>=|<=|<|>)\s*([0-9]*\.?[0-9]+)")


def row(what: str, ours: float | None, baseline: float | None = None, target: str = "", **extra: Any) -> dict:
    """A row; `ratio` is ours / baseline when both are measured. A target like "ratio >= 0.95" or "ours <= 600"
    is judged by `verdict`; a bare ">= 0.9" is read against the ratio (the other benchmark modules write those)."""
    ratio = ours / baseline if ours is not None and baseline not in (None, 0) else None
    return dict(what=what, ours=ours, baseline=baseline, ratio=ratio, target=target, **extra)


def verdict(r: dict) -> str:
    """"ok", "MISS", or "" when the target is not a bound we can check (or a figure is missing)."""
    match = _BOUND.match(str(r.get("target") or ""))
    if not match:
        return ""
    subject, op, bound = match.group(1) or "ratio", match.group(2), float(match.group(3))
    value = r.get(subject)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    ok = {">=": value >= bound, "<=": value <= bound, ">": value > bound, "<": value < bound}[op]
    return "ok" if ok else "MISS"


def fmt(value: Any) -> str:
    """Three significant figures or so, without scientific notation for everyday sizes."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    magnitude = abs(value)
    if magnitude >= 100 or (isinstance(value, int)):
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.01 or magnitude == 0:
        return f"{value:.3f}"
    return f"{value:.2e}"


def render(rows: Sequence[dict], header: str = "") -> str:
    """A plain-text table: section lines, then one line per row with its verdict (and its note, indented)."""
    lines = [header] if header else []
    width = max([len(str(r.get("what", ""))) for r in rows] + [4])
    head = f"{'what':<{width}}  {'ours':>10}  {'baseline':>10}  {'ratio':>7}  {'':4}  target"
    lines += [head, "-" * len(head)]
    section = None
    for r in rows:
        if r.get("section") != section:
            section = r.get("section")
            lines.append(f"[{section}]")
        lines.append(
            f"{str(r.get('what', '')):<{width}}  {fmt(r.get('ours')):>10}  {fmt(r.get('baseline')):>10}  "
            f"{fmt(r.get('ratio')):>7}  {verdict(r):4}  {r.get('target') or ''}".rstrip()
        )
        if r.get("note"):
            lines.append(f"    {r['note']}")
    return "\n".join(lines)


def to_json(rows: Sequence[dict], machine: dict, **meta: Any) -> str:
    """{"machine": ..., **meta, "rows": [...]}, each row with its verdict; NaN becomes null."""
    out = []
    for r in rows:
        item = {k: _clean(v) for k, v in r.items()}
        item["verdict"] = verdict(r) or None
        out.append(item)
    return json.dumps({"machine": machine, **meta, "rows": out}, indent=2, ensure_ascii=False)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return value.item()
    return value
