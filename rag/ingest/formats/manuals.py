"""Which files are man pages and info manuals, by their names, and what a citation calls them: `ls(1)`, `(coreutils)`.

A man page lives in a `manN/` folder and is named `<name>.<section>` (`ls.1`, `printf.3posix`), maybe gzipped;
an info manual is `<name>.info`, a split part `<name>.info-2`, maybe gzipped.
"""

from __future__ import annotations

import re

_MAN_FOLDER = re.compile(r"^man(?P<section>[1-9nl][a-z0-9]*)$")
_MAN_FILE = re.compile(r"^(?P<name>.+)\.(?P<section>[1-9nl][a-z0-9+_-]*)(?:\.gz)?$")
_INFO_FILE = re.compile(r"^(?P<name>.+?)\.info(?:-\d+)?(?:\.gz)?$")
# A translation's folder: de, pt_BR, zh_CN.UTF-8, sr@latin
LOCALE_FOLDER = re.compile(r"^[a-z]{2,3}(?:_[A-Z]{2})?(?:\.[\w-]+)?(?:@\w+)?$")


def man_parts(doc_id: str) -> tuple[str, str, str] | None:
    """(name, section, language or "") of a man page's id such as `de/man1/ls.1.gz`, or None if it is not one.

    The file's section must belong to its folder's (`man3/printf.3posix` is; `man1/notes.txt` is not).
    """
    parts = doc_id.split("/")
    if len(parts) < 2:
        return None
    folder, file = _MAN_FOLDER.match(parts[-2]), _MAN_FILE.match(parts[-1])
    if not folder or not file or not file.group("section").startswith(folder.group("section")[0]):
        return None
    # The folder above manN/ is a language (`de/man1/`) unless it is the tree itself (`share/man/man1/`).
    language = parts[-3] if len(parts) >= 3 and parts[-3] != "man" and LOCALE_FOLDER.match(parts[-3]) else ""
    return file.group("name"), file.group("section"), language


def info_name(doc_id: str) -> str | None:
    """The manual an info file belongs to (`coreutils` for `coreutils.info-2.gz`), or None if it is not one."""
    m = _INFO_FILE.match(doc_id.rsplit("/", 1)[-1])
    return m.group("name") if m else None


def is_manual(doc_id: str) -> bool:
    """True for a man page or an info manual: files read (and ungzipped) by name, whatever their suffix."""
    return man_parts(doc_id) is not None or info_name(doc_id) is not None


def display_name(doc_id: str) -> str:
    """What a citation calls a document: `ls(1)` for a man page, `(coreutils)` for an info manual, else its id."""
    man = man_parts(doc_id)
    if man is not None:
        return f"{man[0]}({man[1]})" + (f" [{man[2]}]" if man[2] else "")
    info = info_name(doc_id)
    return f"({info})" if info is not None else doc_id
