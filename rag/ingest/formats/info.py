"""GNU info manuals: each node a section headed by its name, so a citation reads `(coreutils) · ls invocation`.

An info file is nodes separated by the 0x1F byte, each starting with a `File: x.info,  Node: NAME,  Next: ...`
line; the tag table and indirect-file list hold no text and are dropped. Inside a node, a title underlined with
`*`, `=`, `-` or `.` is the node's own title (dropped: the node name says it) or a subsection (a level 2 heading);
text is kept line for line in blank-line separated paragraphs, so an option's lines stay with its description.
"""

from __future__ import annotations

import re

from rag.ingest.formats import Layout
from rag.ingest.formats.rendered import Block, rendered_layout

SEPARATOR = "\x1f"
_NODE = re.compile(r"^File: [^,]*,\s+Node: ([^,\t\n]+)")
_UNDERLINE = re.compile(r"^([*=\-.])\1{2,}\s*$")
_INDEX_MARK = re.compile(r"\x00\x08\[(?:index|/index)\x00\x08\]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def info_layout(text: str) -> Layout:
    """The Layout of one info file (a whole manual or one part of a split one)."""
    blocks: list[Block] = []
    line_no = 1
    for part in text.split(SEPARATOR):
        blocks.extend(_node_blocks(part, line_no))
        line_no += part.count("\n")
    return rendered_layout(blocks)


def _node_blocks(part: str, first_line: int) -> list[Block]:
    """A node's heading and paragraphs; nothing for the preamble's licence, the tag table or an indirect list."""
    lines = _CONTROLS.sub("", _INDEX_MARK.sub("", part)).split("\n")
    start = 1 if lines and not lines[0].strip() else 0  # the separator ends its line
    header = _NODE.match(lines[start]) if start < len(lines) else None
    if header is None:
        return []
    blocks = [Block("heading", header.group(1).strip(), first_line + start, 1)]
    para: list[str] = []
    para_line = 0
    titled = False
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if _UNDERLINE.match(line) and para and len(para) == 1 and abs(len(line.rstrip()) - len(para[0])) <= 1:
            if titled:
                blocks.append(Block("heading", para[0].strip(), para_line, 2))
            titled = True
            para, para_line = [], 0
            continue
        if not line.strip():
            if para:
                blocks.append(Block("para", "\n".join(para).strip("\n"), para_line))
            para, para_line = [], 0
            continue
        if not para:
            para_line = first_line + i
        para.append(line.rstrip())
    if para:
        blocks.append(Block("para", "\n".join(para).strip("\n"), para_line))
    return blocks
