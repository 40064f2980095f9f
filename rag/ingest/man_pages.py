"""Your machine's own manuals as a docs source: which man pages (`--man`, `--man 1,8`), read ungzipped, `.so` followed.

A man tree is a folder of `manN/` folders (/usr/share/man); translations live in locale folders inside it
(`de/man1/`) and are left out unless their language is asked for. A page that is only `.so man1/other.1` is an
alias: skipped (counted) when the page it names is read anyway, else read as that page. `.so` is followed only
within the page's own man tree, at most MAX_SO_DEPTH deep, and a loop is a skip reason, never a hang.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from rag.errors import DocsNotFound
from rag.ingest.decoding import decode_text, looks_binary
from rag.ingest.formats.manuals import info_name, man_parts

# The largest man(7) page here is bash.1 at 311 KB; a 4 MB page is not a manual page but something else.
MAX_MAN_PAGE_BYTES = 4 * 1024 * 1024
MAX_INFO_BYTES = 20 * 1024 * 1024  # zsh's whole manual, unsplit, would be 3 MB
MAX_SO_DEPTH = 8
_SECTIONS = re.compile(r"^[1-9nl][a-z0-9]*$")
_SO = re.compile(r"^\.\s*so\s+(\S+)\s*$")
_ANY_SO = re.compile(r"^\.[^\S\n]*so[^\S\n]", re.MULTILINE)  # some line could match _SO: worth a closer look
DEFAULT_MANPATH = ("/usr/local/share/man", "/usr/share/man")


class Skip(Exception):
    """A manual file left out, with the reason counted in the corpus' skipped summary."""


@dataclass(frozen=True)
class ManSource:
    """The man pages of some man trees, of some sections (empty: all); translations are read from their own tree."""

    trees: tuple[Path, ...]
    sections: frozenset[str] = frozenset()

    def __fspath__(self) -> str:
        return str(self.root)

    def __truediv__(self, other: str) -> Path:
        return self.root / other

    def __str__(self) -> str:
        return str(self.root)

    @property
    def root(self) -> Path:
        """The folder doc ids are relative to: the tree itself when there is one."""
        return self.trees[0] if len(self.trees) == 1 else Path(os.path.commonpath([str(t) for t in self.trees]))

    @property
    def index_key(self) -> str:
        """Names this choice of pages for the index cache: `--man 1` and `--man 8` keep two indexes."""
        spec = "|".join([*map(str, self.trees), ",".join(sorted(self.sections))])
        return "man-" + hashlib.sha256(spec.encode()).hexdigest()[:16]

    def wants(self, doc_id: str) -> bool:
        """True for a page of a chosen section (`--man 3` takes 3posix and 3ssl too)."""
        parts = man_parts(doc_id)
        return parts is not None and (not self.sections or parts[1] in self.sections or parts[1][0] in self.sections)


def man_stamp(source: ManSource) -> tuple[tuple[str, int], ...]:
    """What the chosen sections' `manN/` folders look like: their modification times, a stat each.

    A package install or removal renames pages into these folders or out of them (dpkg writes `x.1.gz.dpkg-new`,
    then renames it), which changes the folder's time: noticing that costs a stat per folder, not per page
    (man1 here holds 17,878). A page rewritten in place is the blind spot; `smoldocs index` still finds it.
    """
    out = []
    for tree in source.trees:
        try:
            entries = sorted(os.scandir(tree), key=lambda e: e.name)
        except OSError:
            out.append((str(tree), -1))
            continue
        for entry in entries:
            section = entry.name[3:]
            if not entry.name.startswith("man") or not section or not entry.is_dir():
                continue
            if source.sections and not any(s[0] == section[0] for s in source.sections):
                continue
            try:
                out.append((entry.path, entry.stat().st_mtime_ns))
            except OSError:
                continue
    return tuple(out)


def parse_sections(spec: str | None) -> frozenset[str]:
    """`--man 1,8` as {"1", "8"}; None or "" (a bare --man) is every section. A bad spec is one clear error."""
    if not spec:
        return frozenset()
    sections = [s.strip() for s in spec.split(",") if s.strip()]
    bad = [s for s in sections if not _SECTIONS.match(s)]
    if bad or not sections:
        raise DocsNotFound(f"--man takes man sections such as 1 or 1,8 (not {spec!r}): or give no section for all")
    return frozenset(sections)


def man_trees(env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The existing folders of the man path: $MANPATH, else `manpath`, else the usual two, each once."""
    spec = (os.environ if env is None else env).get("MANPATH", "").strip(":")
    if not spec and shutil.which("manpath"):
        try:
            spec = subprocess.run(["manpath", "-q"], capture_output=True, text=True, timeout=10, check=False).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            spec = ""
    folders = spec.split(":") if spec else list(DEFAULT_MANPATH)
    seen: dict[str, Path] = {}
    for folder in folders:
        path = Path(folder).expanduser()
        if path.is_dir():
            seen.setdefault(os.path.realpath(path), path.resolve())
    return tuple(seen.values())


def man_source(sections: str | None, trees: tuple[Path, ...] | None = None) -> ManSource:
    """What `--man [SECTIONS]` reads; no man tree on this machine is one clear error."""
    found = man_trees() if trees is None else trees
    if not found:
        raise DocsNotFound("no man pages on this machine (manpath lists no folder): pass --docs DIR instead")
    return ManSource(found, parse_sections(sections))


def tree_of(path: Path) -> Path:
    """The man tree of a page: the folder that holds its `manN/` folder (`/usr/share/man/de` for a German page)."""
    return path.parent.parent


def read_bytes(path: Path, cap: int) -> bytes:
    """A file's bytes, ungzipped when it ends in .gz, refusing more than `cap` (a gzip bomb stops at the cap)."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                data = fh.read(cap + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(cap + 1)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise Skip("damaged .gz") from exc
    except OSError as exc:
        raise Skip("unreadable") from exc
    if len(data) > cap:
        raise Skip(f"too large (over {cap / 2**20:g} MB)")
    return data


def so_target(text: str) -> str | None:
    """The page a `.so` alias names (`man1/other.1`), or None when the page has text of its own."""
    if _ANY_SO.search(text) is None:  # most pages: no need to look at every line (a third of a warm load of man pages)
        return None
    lines = [line for line in text.split("\n") if line.strip() and not line.startswith(('.\\"', "'\\\""))]
    m = _SO.match(lines[0]) if len(lines) == 1 else None
    return m.group(1) if m else None


def resolve_so(name: str, tree: Path) -> Path:
    """The file a `.so NAME` line means: NAME (or NAME.gz) within `tree`; anywhere else is a Skip."""
    for candidate in (tree / name, tree / (name + ".gz")):
        try:
            real = Path(os.path.realpath(candidate, strict=True))
        except OSError:
            continue
        if not real.is_relative_to(os.path.realpath(tree)):
            raise Skip(".so outside the man tree")
        if real.is_file():
            return candidate
    raise Skip(".so to a missing page")


def include_so(text: str, path: Path, seen: tuple[str, ...] = (), indexed: frozenset[str] | set[str] = frozenset(),
               sources: list[Path] | None = None) -> str:
    """The page with every `.so` line replaced by the page it names, within the man tree; a loop is a Skip.

    A page in `indexed` (real paths) is read as itself, so including it again would only duplicate it: zshall(1)
    `.so`s all fifteen zsh pages, and its own overview is what it adds. Every page a `.so` names, included or
    not, is added to `sources`: the text depends on each.
    """
    if "\n.so" not in "\n" + text:
        return text
    real = os.path.realpath(path)
    if real in seen or len(seen) >= MAX_SO_DEPTH:
        raise Skip(".so loop")
    tree = tree_of(path)
    out: list[str] = []
    for line in text.split("\n"):
        m = _SO.match(line)
        if m is None:
            out.append(line)
            continue
        target = resolve_so(m.group(1), tree)
        if sources is not None:
            sources.append(target)
        if os.path.realpath(target) not in indexed:
            page = _decode(read_bytes(target, MAX_MAN_PAGE_BYTES))
            out.append(include_so(page, target, (*seen, real), indexed, sources))
    return "\n".join(out)


def _decode(data: bytes) -> str:
    if looks_binary(data):
        raise Skip("binary")
    return decode_text(data)


def read_manual(doc_id: str, path: Path, included: set[str] | None = None, sources: list[Path] | None = None) -> str:
    """The text of a man page (with `.so` followed) or an info file; a Skip says why it is left out.

    `included`: the real paths of the pages this corpus reads, so an alias of one of them is skipped.
    `sources`: gets the files the text was made of (the page, then what its `.so` lines name), for file_stamps.
    """
    if sources is not None:
        sources.append(path)
    if man_parts(doc_id) is None:
        # Info's index nodes mark entries with NUL-backspace pairs: those are text, any other NUL is not.
        data = read_bytes(path, MAX_INFO_BYTES) if info_name(doc_id) is not None else b""
        return _decode(data.replace(b"\0\b[index\0\b]", b"").replace(b"\0\b[/index\0\b]", b""))
    text = _decode(read_bytes(path, MAX_MAN_PAGE_BYTES))
    alias = so_target(text)
    if alias is None:
        return include_so(text, path, indexed=included or frozenset(), sources=sources)
    whole = include_so(text, path, sources=sources)  # a loop or a link out of the tree is a Skip before an alias is
    if included is not None and os.path.realpath(resolve_so(alias, tree_of(path))) in included:
        raise Skip("man page alias (.so)")
    return whole


Stamp = tuple[str, int, int, int]  # (path, size, mtime in ns, inode)


def file_stamps(paths: list[Path]) -> tuple[Stamp, ...]:
    """What each file looks like on disk, links followed: while every stamp holds, a page reads the same.

    Reading man1's 17,816 pages again (gunzip, decode, `.so`) was most of a warm load; a stat each is not.
    A file rewritten within the same nanosecond tick at the same size and inode is the blind spot, as for make.
    """
    out = []
    for path in paths:
        st = os.stat(path)
        out.append((str(path), st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def stamps_hold(stamps) -> bool:
    """True when every file of `stamps` (as file_stamps made them, or read back from JSON) is as it was."""
    try:
        return bool(stamps) and all(file_stamps([Path(s[0])])[0] == tuple(s) for s in stamps)
    except (OSError, TypeError, ValueError, IndexError):
        return False
