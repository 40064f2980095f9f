"""docs_corpus in mixed formats: the same docs, some as PDF, HTML and AsciiDoc, with the questions re-pointed.

Retrieval over this folder against retrieval over the all-Markdown original shows what each loader loses:

    python -m benchmarks.mixed_formats /tmp/mixed     # the folder, and its questions in questions.jsonl.mixed
    python -m benchmarks.fitting.retrieval_eval --docs /tmp/mixed --questions /tmp/mixed/questions.jsonl.mixed

contracts/ becomes PDF (one page per top-level section, `##` titles in the outline), guide/ HTML and course/
AsciiDoc. Needs fpdf2 (the `test` extra) to write the PDFs.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import sys
from pathlib import Path

from rag.ingest.corpus import default_docs_dir

CONVERT = {"contracts": ".pdf", "guide": ".html", "course": ".adoc"}
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_FENCE = re.compile(r"^(```|~~~)")
_INLINE = re.compile(r"\*\*|`|\[([^\]]+)\]\([^)]*\)")


def _plain(line: str) -> str:
    return _INLINE.sub(lambda m: m.group(1) or "", line)


def _blocks(markdown: str):
    """(kind, level, text) of a Markdown file: heading, para, or code."""
    lines = markdown.split("\n")
    i, para = 0, []
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            if para:
                yield "para", 0, " ".join(para)
                para = []
            j = i + 1
            while j < len(lines) and not _FENCE.match(lines[j]):
                j += 1
            yield "code", 0, "\n".join(lines[i + 1 : j])
            i = j + 1
            continue
        m = _HEADING.match(line)
        if m or not line.strip():
            if para:
                yield "para", 0, " ".join(para)
                para = []
            if m:
                yield "heading", len(m.group(1)), _plain(m.group(2))
        else:
            para.append(_plain(line.strip()))
        i += 1
    if para:
        yield "para", 0, " ".join(para)


def to_html(markdown: str) -> str:
    out = ["<!DOCTYPE html><html><head><title>page</title></head><body>",
           '<nav role="navigation"><a href="/">Home</a></nav><main>']
    for kind, level, text in _blocks(markdown):
        if kind == "heading":
            out.append(f"<h{level}>{html.escape(text)}</h{level}>")
        elif kind == "code":
            out.append(f"<pre>{html.escape(text)}</pre>")
        else:
            out.append(f"<p>{html.escape(text)}</p>")
    return "\n".join(out + ["</main><footer>footer</footer></body></html>"])


def to_asciidoc(markdown: str) -> str:
    out = []
    for kind, level, text in _blocks(markdown):
        if kind == "heading":
            out.append(f"{'=' * level} {text}")
        elif kind == "code":
            out.append(f"----\n{text}\n----")
        else:
            out.append(text)
    return "\n\n".join(out) + "\n"


def to_pdf(markdown: str, path: Path) -> None:
    from fpdf import FPDF

    def latin(text: str) -> str:  # the core PDF fonts cover Latin-1 only
        return text.replace("\u2014", "-").replace("\u2013", "-").replace("\u2192", "->").encode(
            "latin-1", "replace").decode("latin-1")

    pdf = FPDF()
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    for kind, level, text in _blocks(markdown):
        if kind == "heading":
            if level <= 2 and pdf.page_no() and pdf.get_y() > 40:
                pdf.add_page()
            pdf.start_section(latin(text), level=max(0, level - 1))
            pdf.set_font("Helvetica", "B", 16 - 2 * level)
            pdf.multi_cell(0, 8, latin(text), new_x="LMARGIN", new_y="NEXT")
        else:
            pdf.set_font("Courier" if kind == "code" else "Helvetica", size=10)
            pdf.multi_cell(0, 5, latin(text), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    pdf.output(str(path))


def build(target: Path) -> dict[str, str]:
    """Write the mixed folder; return the renamed doc ids (old -> new)."""
    source = default_docs_dir()
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    renamed = {}
    for folder, suffix in CONVERT.items():
        for md in sorted((target / folder).glob("*.md")):
            text = md.read_text(encoding="utf-8")
            new = md.with_suffix(suffix)
            if suffix == ".pdf":
                to_pdf(text, new)
            else:
                new.write_text(to_html(text) if suffix == ".html" else to_asciidoc(text), encoding="utf-8")
            md.unlink()
            renamed[f"{folder}/{md.name}"] = f"{folder}/{new.name}"
    questions = []
    for line in (source / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            row["doc"] = renamed.get(row.get("doc"), row.get("doc"))
            row["alt_docs"] = [renamed.get(d, d) for d in row.get("alt_docs") or ()]
            questions.append(json.dumps(row, ensure_ascii=False))
    (target / "questions.jsonl").unlink()
    (target / "questions.jsonl.mixed").write_text("\n".join(questions) + "\n", encoding="utf-8")
    return renamed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchmarks.mixed_formats FOLDER", file=sys.stderr)
        return 2
    target = Path(args[0])
    renamed = build(target)
    print(f"{len(renamed)} docs converted in {target}; questions: {target / 'questions.jsonl.mixed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
