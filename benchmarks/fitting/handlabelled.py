"""The hand-labelled claim sets: real Debian documentation passages, each with claims a person wrote.

Per passage: a paraphrase and a near copy (supported); a fact altered in one detail and a statement on the same
topic that the passage does not make (unsupported); some passages also carry a question or a bare number. The
split into `train` (fit) and `test` (held back) is fixed in the file: per passage in the first set
(claims_handlabelled.jsonl), per package in the second (claims_unseen.jsonl, from packages the first never used).
Passages of the packages independent checks use (RESERVED_PACKAGES) load as split `reserved`: never fitted on,
reported apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from benchmarks.fitting.calibration_set import ROOT, Item
from rag.types import Chunk

HANDLABELLED_FILE = ROOT / "tests" / "data" / "claims_handlabelled.jsonl"
UNSEEN_FILE = ROOT / "tests" / "data" / "claims_unseen.jsonl"
SUPPORTED_KINDS = ("paraphrase", "near_copy")
UNSUPPORTED_KINDS = ("altered", "unstated", "question", "number_only")
ALTERATIONS = ("name", "ident_number", "quantifier", "number", "path")
# What an altered claim of the second set changed: two things of the passage put the other way round, a name or
# value (a key chord among them), a negation, a quantifier widened, a number.
UNSEEN_ALTERATIONS = ("swapped", "name", "negation", "quantifier", "number")
RESERVED_PACKAGES = frozenset({"git-doc", "nodejs-doc", "sqlite3-doc"})  # independent checks use these
RESERVED = "reserved"


class HandSetError(ValueError):
    """The hand-labelled file is malformed."""


def fit_packages(paths: Sequence[Path]) -> tuple[str, ...]:
    """The packages with passages in the train split of these hand-labelled files, reserved ones left out."""
    found = set()
    for path in paths:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        found |= {r["package"] for r in rows if r["type"] == "passage" and r["split"] == "train"}
    return tuple(sorted(found - RESERVED_PACKAGES))


def load_handlabelled(path: Path = HANDLABELLED_FILE) -> list[Item]:
    """Every claim as an Item whose chunk is its passage; an altered claim's kind names what was altered."""
    passages: dict[str, tuple[Chunk, str]] = {}
    items: list[Item] = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            if record["type"] == "passage":
                where = f"{record['package']}:{record['file']}"
                chunk = Chunk(f"{where}#{record['id']}", record["file"], where, record["text"])
                split = RESERVED if record["package"] in RESERVED_PACKAGES else record["split"]
                passages[record["id"]] = (chunk, split)
                continue
            if record["passage"] not in passages:
                raise HandSetError(f"{path.name}:{number}: claim {record['id']} names an unknown passage")
            chunk, split = passages[record["passage"]]
            kind = record["kind"] + (f":{record['alteration']}" if record["alteration"] else "")
            items.append(Item(record["id"], kind, record["label"], split, record["claim"], chunk, ""))
    return items
