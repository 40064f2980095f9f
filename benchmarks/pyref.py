"""A second retrieval question set, over a real API reference: pages of Python's library reference (HTML).

The pages come from Debian's python3-doc package (`apt-get install python3-doc`), copied into a folder; the
questions, phrased as a user would ask them, live in benchmarks/data/pyref_questions.jsonl with gold pages.

    python -m benchmarks.pyref build /tmp/pyref         # copy the pages into /tmp/pyref/library/
    python -m benchmarks.fitting.retrieval_eval --docs /tmp/pyref --questions benchmarks/data/pyref_questions.jsonl --compare-terms
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

QUESTIONS = Path(__file__).resolve().parent / "data" / "pyref_questions.jsonl"
# Every gold and alternative page of the questions, and neighbours that compete with them.
PAGES = """functions io os os.path pathlib shutil glob fnmatch tempfile json csv sqlite3 re string stdtypes datetime
time calendar collections itertools functools operator subprocess threading multiprocessing concurrent.futures
asyncio-task logging argparse unittest random math statistics decimal fractions hashlib secrets base64 zipfile
tarfile gzip urllib.request urllib.parse http.client socket pickle shelve copy dataclasses enum typing contextlib
textwrap difflib heapq bisect queue uuid configparser timeit pprint traceback signal shlex struct zoneinfo sys
platform inspect warnings weakref array getpass locale codecs""".split()


def library_dir() -> Path:
    """The library/ folder of the installed python3-doc HTML, newest Python first."""
    for root in sorted(Path("/usr/share/doc").glob("python3*/html/library"), reverse=True):
        if (root / "functions.html").is_file():
            return root
    raise SystemExit("python3-doc is not installed: run `apt-get install python3-doc` (Debian/Ubuntu)")


def build(target: Path) -> int:
    """Copy the pages into target/library/; return how many were copied."""
    source = library_dir()
    out = target / "library"
    out.mkdir(parents=True, exist_ok=True)
    copied = 0
    for page in PAGES:
        path = source / f"{page}.html"
        if path.is_file():
            shutil.copyfile(path, out / path.name)
            copied += 1
        else:
            print(f"missing in {source}: {path.name}", file=sys.stderr)
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pyref", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="copy the reference pages into a folder")
    b.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    n = build(args.folder)
    print(f"{n} pages in {args.folder / 'library'}; questions: {QUESTIONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
