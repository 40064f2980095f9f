"""What a document says about itself: front matter status, supersession and expiry, or an archive folder."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import yaml

from rag.types import SourceInfo

OUTDATED_STATUSES = frozenset({"archived", "deprecated", "superseded", "obsolete", "outdated"})
OUTDATED_FOLDERS = frozenset({"archive", "archived", "deprecated"})
# Unambiguous spellings only: "01/05/2024" could be January or May, so it is reported, not guessed.
DATE_FORMATS = ("%Y/%m/%d", "%Y.%m.%d", "%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%b %d %Y")
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Loader(yaml.SafeLoader):
    """SafeLoader that leaves dates as strings: `2024-13-01` must become one notice, not a failed file."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


CURRENT = SourceInfo()


def front_matter(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the YAML front matter as a dict, or None when there is none or it is unusable; a notice when unusable)."""
    m = _FRONT_MATTER.match(text)
    if m is None:
        return None, None
    try:
        data = yaml.load(m.group(1), Loader=_Loader)  # _Loader is a SafeLoader subclass
    except (yaml.YAMLError, ValueError) as exc:
        where = exc.problem_mark if isinstance(exc, yaml.MarkedYAMLError) else None
        line = f" (line {where.line + 2})" if where is not None else ""
        return None, f"front matter is not valid YAML{line}: indexed as text; fix the YAML between the --- lines"
    except RecursionError:  # PyYAML composes nested collections recursively
        return None, "front matter nests too deep: indexed as text; flatten the YAML between the --- lines"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return None, "front matter is not a YAML mapping of keys to values: indexed as text"
    return {str(k).strip().lower(): v for k, v in data.items()}, None


def parse_date(value: Any) -> dt.date | None:
    """A date from YAML (a date, a datetime) or a string in an unambiguous format; None if it is none of those."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    for parse in (dt.date.fromisoformat, lambda t: dt.datetime.fromisoformat(t).date()):
        try:
            return parse(text)
        except ValueError:
            pass
    for fmt in DATE_FORMATS:
        try:
            return dt.datetime.strptime(text, fmt).date()
        except ValueError:
            pass
    return None


def source_info(doc_id: str, text: str = "") -> SourceInfo:
    """The standing of document `doc_id` from its folder and its front matter (only .md files have any)."""
    meta, notice = front_matter(text) if doc_id.lower().endswith((".md", ".markdown")) else (None, None)
    meta = meta or {}
    reasons: list[str] = []
    status = str(meta.get("status") or "").strip().lower()
    if status in OUTDATED_STATUSES:
        reasons.append(f"status: {status}")
    superseded_by = meta.get("superseded_by") or meta.get("superseded-by")
    superseded_by = str(superseded_by).strip() if superseded_by else None
    if superseded_by:
        reasons.append(f"superseded by {superseded_by}")
    folders = [f for f in doc_id.split("/")[:-1] if f.lower() in OUTDATED_FOLDERS]
    if folders:
        reasons.append(f"in folder {folders[0]}/")
    expires = None
    if meta.get("expires") not in (None, ""):
        when = parse_date(meta["expires"])
        if when is None:
            problem = f"expires: {meta['expires']!r} is not a date: write it as YYYY-MM-DD; the page is kept"
            notice = f"{notice}; {problem}" if notice else problem
        else:
            expires = when.isoformat()
    return SourceInfo(bool(reasons), "; ".join(reasons), superseded_by, expires, notice)
