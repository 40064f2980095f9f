"""The hand-labelled calibration set: real Debian documentation passages, each with claims a person wrote.

Per passage: a paraphrase and a near copy (supported); a fact altered in one detail and a statement on the same
topic that the passage does not make (unsupported); some passages also carry a question or a bare number. The
split into `train` (fit) and `test` (held back) is per passage and fixed in the file.
"""

from __future__ import annotations

import json
from pathlib import Path

from rag.evaluation.calibration_set import ROOT, Item
from rag.types import Chunk

HANDLABELLED_FILE = ROOT / "tests" / "data" / "claims_handlabelled.jsonl"
SUPPORTED_KINDS = ("paraphrase", "near_copy")
UNSUPPORTED_KINDS = ("altered", "unstated", "question", "number_only")
ALTERATIONS = ("name", "ident_number", "quantifier", "number", "path")


class HandSetError(ValueError):
    """The hand-labelled file is malformed."""


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
                passages[record["id"]] = (chunk, record["split"])
                continue
            if record["passage"] not in passages:
                raise HandSetError(f"{path.name}:{number}: claim {record['id']} names an unknown passage")
            chunk, split = passages[record["passage"]]
            kind = record["kind"] + (f":{record['alteration']}" if record["alteration"] else "")
            items.append(Item(record["id"], kind, record["label"], split, record["claim"], chunk, ""))
    return items
