"""The suite's packages as packages.json fixes them: where each one's files come from, where its copy lives, its split."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from models.paths import cache_dir

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PACKAGES_FILE = HERE / "packages.json"
QUESTIONS_DIR = HERE / "questions"
SPLITS = ("fit", "held", "all")


@dataclass(frozen=True)
class Package:
    """One documentation package of the suite."""

    name: str
    apt: str | None  # the Debian package(s) that ship it, space-separated; None: files of this repository
    format: str
    split: str  # "fit": may be fitted on; "held": only reported
    source: Path  # the folder its files are copied from (or, for a repo folder, searched in place)
    include: tuple[str, ...]  # globs relative to `source`
    exclude: tuple[str, ...] = ()  # globs of included files to leave out
    rename: tuple[tuple[str, str], ...] = ()  # suffix -> suffix, for files shipped under a name smoldocs misreads
    questions: tuple[Path, ...] = ()
    note: str = ""

    @property
    def in_repo(self) -> bool:
        return self.apt is None

    @property
    def apt_names(self) -> tuple[str, ...]:
        """The Debian packages it reads (tool-manuals reads the man pages of thirty)."""
        return tuple((self.apt or "").split())

    def folder(self, root: Path | None = None) -> Path:
        """Where the package's files are searched: its cache copy, or the repo folder itself."""
        if self.in_repo:
            return self.source
        return (root or suite_dir()) / self.name


def suite_dir() -> Path:
    """<smoldocs cache>/realdocs: one folder per package, made by `python -m benchmarks.realdocs build`."""
    return cache_dir() / "realdocs"


def _package(row: dict, base: Path, questions_dirs: Sequence[Path]) -> Package:
    split = row["split"]
    if split not in SPLITS[:2]:
        raise ValueError(f"package {row['name']}: split must be fit or held, not {split!r}")
    source = Path(row["source"])
    listed = row.get("questions")
    questions = [base / q for q in ([listed] if isinstance(listed, str) else listed or [])]
    for folder in questions_dirs:
        own = Path(folder) / f"{row['name']}.jsonl"
        if own.is_file() and own not in questions:
            questions.append(own)
    return Package(
        name=row["name"], apt=row.get("apt"), format=row["format"], split=split,
        source=source if source.is_absolute() else base / source,
        include=tuple(row["include"]), exclude=tuple(row.get("exclude") or ()), rename=tuple(sorted((row.get("rename") or {}).items())),
        questions=tuple(questions), note=row.get("note", ""),
    )


def fit_only(packages: Sequence[Package], what: str) -> None:
    """ValueError unless every package is a fit package: `what` (the reranker, an encoder) never trains on held ones."""
    held = [p.name for p in packages if p.split != "fit"]
    if held:
        raise ValueError(f"{what} trains on fit packages only, not {', '.join(held)}")


def load_packages(path: Path = PACKAGES_FILE, questions_dirs: Sequence[Path] = (QUESTIONS_DIR,),
                  base: Path = REPO) -> list[Package]:
    """Every package of packages.json; relative sources and question files are relative to `base`.

    A package's questions are the files packages.json names plus `<name>.jsonl` of each of `questions_dirs`."""
    rows = json.loads(Path(path).read_text(encoding="utf-8"))["packages"]
    return [_package(row, base, questions_dirs) for row in rows]


def choose_packages(packages: Sequence[Package], names: Sequence[str] | None = None, split: str = "all") -> list[Package]:
    """The packages named (all when none are) in the split asked for; an unknown name or split is a ValueError."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    known = {p.name for p in packages}
    unknown = [n for n in names or () if n not in known]
    if unknown:
        raise ValueError(f"unknown package {', '.join(unknown)}: choose among {', '.join(sorted(known))}")
    return [p for p in packages if (not names or p.name in names) and split in ("all", p.split)]
