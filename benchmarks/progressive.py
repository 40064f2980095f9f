"""Progressive indexing on a fresh synthetic folder: a usable prompt, a first answer, a first search.

Ours: the TUI's live session (ready once the stored chunks are loaded and a short chunking budget is spent;
chunking, then embedding, go on behind) and one-shot commands that embed for at most --embed-budget seconds.
Baseline, measured in the same run on the same folder with a fresh index: today's blocking build (every file
chunked and every chunk embedded before the prompt or the search answers).

Each figure comes from a fresh process (imports and model loads included), as a user would see it. The default
and --quick run the 2,000-file folder; SMOLDOCS_BENCH_FULL=1 adds 5,000 and 10,000 files (growth, ours alone).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.child import REPO, run_child
from benchmarks.table import row

SECTION = "progressive"
QUESTION = "How does the KV cache speed up generation?"
QUERY = "kv cache memory per token"

READY_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from agent.session import open_session
from agent.events import AnswerFinished, TextDelta
docs, index_dir, live, question = sys.argv[1], sys.argv[2], sys.argv[3] == "live", sys.argv[4]
session = open_session(docs, index_dir=index_dir, live=live)
ready = time.perf_counter() - t0
coverage = session.dense_coverage
first_token = None
for event in session.ask(question):
    if isinstance(event, TextDelta) and first_token is None:
        first_token = time.perf_counter() - t0
    if isinstance(event, AnswerFinished):
        answered = time.perf_counter() - t0
session.close()
print(json.dumps({"ready": ready, "first_token": first_token, "answer": answered, "coverage": coverage,
                  "chunks": session.index_size}))
"""


def synthetic_folder(root: Path, n_files: int, seed: int = 0) -> Path:
    """`n_files` Markdown pages made of docs_corpus paragraphs under new headings (0.7-1 KB, one or two chunks)."""
    from rag.ingest.corpus import default_docs_dir

    paragraphs = []
    for path in sorted(default_docs_dir().rglob("*.md")):
        for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            block = block.strip()
            if len(block) > 80 and not block.startswith(("#", "---", "|", "```")):
                paragraphs.append(block)
    rng = random.Random(seed)
    if root.exists():
        shutil.rmtree(root)
    for i in range(n_files):
        folder = root / f"part{i // 200:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        sections = []
        for s in range(2):
            body = "\n\n".join(rng.sample(paragraphs, 1))
            sections.append(f"## Section {s + 1} of page {i}\n\n{body}")
        text = f"# Page {i}: {rng.choice(paragraphs).split('.')[0][:60]}\n\n" + "\n\n".join(sections) + "\n"
        (folder / f"page-{i:05d}.md").write_text(text[: 700 + rng.randrange(300)], encoding="utf-8")
    return root


def _python(*argv: str, timeout: float = 1800):
    return run_child([sys.executable, *argv], timeout=timeout)


def session_times(docs: Path, index_dir: Path, live: bool) -> dict:
    """Ready, first token and answer seconds of open_session (+ one question) in a fresh process."""
    if index_dir.exists():
        shutil.rmtree(index_dir)
    run = _python("-c", READY_SCRIPT, str(docs), str(index_dir), "live" if live else "blocking", QUESTION)
    lines = [line for line in run.output.splitlines() if line.startswith("{")]
    if run.returncode != 0 or not lines:
        raise RuntimeError(f"session child failed ({run.returncode}): {run.errors.strip()[-300:]}")
    return json.loads(lines[-1])


def search_seconds(docs: Path, index_dir: Path, budget: str) -> float:
    """Seconds until `smoldocs search` prints its results on a fresh index (a fresh process)."""
    if index_dir.exists():
        shutil.rmtree(index_dir)
    run = _python("-m", "agent", "search", QUERY, "--docs", str(docs), "--index", str(index_dir), "--json",
                  "--embed-budget", budget)
    if run.returncode != 0:
        raise RuntimeError(f"search child failed ({run.returncode}): {run.errors.strip()[-300:]}")
    return run.seconds


def folder_rows(n_files: int, work: Path, baseline: bool = True) -> list[dict]:
    """The rows of one folder size; without `baseline`, ours alone (a blocking build of 10k files takes ~30 min
    on 2 cores and grows with the chunk count, which the 2,000-file rows measure)."""
    docs = synthetic_folder(work / f"docs-{n_files}", n_files)
    size = f"{n_files:,} files"
    ours = session_times(docs, work / "idx-live", True)
    base = session_times(docs, work / "idx-block", False) if baseline else {"ready": None, "answer": None}
    blocking_token = f" (blocking: {base['first_token']:.1f} s)" if baseline and base["first_token"] else ""
    rows = [
        row(f"{size}: chat, to a usable prompt, s", ours["ready"], base["ready"],
            "ours <= 3" if n_files == 2000 else "", section=SECTION,
            note=f"{ours['chunks']:,} chunks; semantic coverage at the prompt {ours['coverage']:.0%}"),
        row(f"{size}: chat, to the first answer, s", ours["answer"], base["answer"], section=SECTION,
            note=f"first token at {ours['first_token'] or float('nan'):.1f} s{blocking_token}"),
    ]
    first = search_seconds(docs, work / "idx-search", os.environ.get("SMOLDOCS_BENCH_BUDGET", "5"))
    blocking = search_seconds(docs, work / "idx-search-block", "all") if baseline else None
    rows.append(row(f"{size}: first `smoldocs search`, s", first, blocking, "ours <= 20" if n_files == 2000 else "",
                    section=SECTION))
    return rows


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke: a 20-file folder, ours alone (two children, not four), to prove the module runs."""
    if smoke:
        sizes = [20]
    else:
        sizes = [2000] + ([5000, 10000] if os.environ.get("SMOLDOCS_BENCH_FULL") and not quick else [])
    work = Path(tempfile.mkdtemp(prefix="smoldocs-progressive-"))
    try:
        rows: list[dict] = []
        for n in sizes:
            rows += folder_rows(n, work, baseline=n == 2000)
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.chdir(REPO)
    from benchmarks.table import render

    print(render(run(quick="--quick" in sys.argv)))
