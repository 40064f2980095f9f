"""Exact things a claim names: options, signals, constants, paths, config keys, man pages, code, and their kinds.

These must match exactly: "SIGTSTP" is not supported by a sentence that says "SIGINT", however alike the rest is.
The kind says what can stand in for what: a claim naming one option, where the cited text names a different
option, contradicts it; a claim naming an option where the text names only a path just goes unconfirmed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rag.verification.markup import plain

OPTION, SIGNAL, CONSTANT, PATH, KEY, PAGE, STRING, NAME, CODE, CHORD, DEFAULT = (
    "option", "signal", "constant", "path", "config key", "man page", "string", "name", "code", "key", "default",
)
KINDS = (OPTION, SIGNAL, CONSTANT, PATH, KEY, PAGE, STRING, NAME, CODE, CHORD, DEFAULT)

_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_TOKEN = re.compile(r"\S+")
_STRIP = "`.,;:!?()[]{}\"'*<>"
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "and/or", "n/a"})
_OPTION = re.compile(r"--?[A-Za-z][\w-]*(?:=\S*)?")
_SIGNAL = re.compile(r"SIG[A-Z][A-Z0-9]+")
_CONSTANT = re.compile(r"\$?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*(?:=\S*)?|\$[A-Za-z_]\w*(?:=\S*)?")
_PAGE = re.compile(r"[A-Za-z][\w.+-]*\(\d[a-z]*\)")
_PATH = re.compile(r"(?:~|\.{0,2})/[\w.@{}*<>$%+~/-]+|[\w.-]+/[\w.@{}*<>$%+~-]+(?:/[\w.@{}*<>$%+~-]+)*")
_ALTERNATIVES = re.compile(r"([\w$.-]+)=\[(\w+(?:\|\w+)+)\]")  # `X=[0|1]` names X=0 and X=1
_KEY = re.compile(r"[a-z_]\w*(?:\.[A-Za-z_]\w*)+")
_NAMEISH = re.compile(r"^\.[A-Za-z]|[a-z][A-Z]|^[A-Za-z]+\d|\w@\{")  # .gitmodules, setMaxListeners, md5, x@{0}
_KEY_CHORD = re.compile(r"(?:(?:alt|ctrl|shift|super)\+)+(?:\w+|[^\s\w])", re.IGNORECASE)  # as matchable() spells them
# The value a default is said to have: "defaults to python", "the default is `none`", "Defaults to ``False``".
_DEFAULT_VALUE = re.compile(r"\bdefaults? (?:is|to|value is) [`'\"]?([A-Za-z][\w.+-]*)", re.IGNORECASE)
_NOT_A_VALUE = frozenset("to the a an be that this used set given taken in on only not".split())
_KEY_SIGN = re.compile(r"[^\w\s]")  # `/` in a kbd role: a key
_NUMERIC = re.compile(r"[\d.,:%+-]+")
_CALL = re.compile(r"[\w.]+\(\w*\)")
# AsciiDoc quotes names in single quotes: 'git gc', the 'recursive' strategy. Not an apostrophe ("user's").
_QUOTED_NAME = re.compile(r"(?<![\w'`])'([A-Za-z][\w.+-]*(?: [\w.+-]+)?)'(?![\w'])")


# A key chord however it is spelled: CTRL-Z, Ctrl+Z, control-Z, ^Z, C-z, <C-z> (and <kbd>Ctrl</kbd>+<kbd>Z</kbd>,
# which rag.markup turns into Ctrl+Z) are all `ctrl+z`; M-x and Alt-x are `alt+x`.
_MODIFIERS = {"ctrl": "ctrl", "control": "ctrl", "ctl": "ctrl", "c": "ctrl", "^": "ctrl", "alt": "alt", "meta": "alt",
              "m": "alt", "shift": "shift", "s": "shift", "cmd": "super", "command": "super", "super": "super",
              "win": "super", "\u229ewin": "super"}
_CHORD = re.compile(
    r"(?<![\w-])<?((?:(?:ctrl|control|ctl|alt|meta|shift|cmd|super|\u229ewin|win)[-+])+|(?:[CMS]-)+(?=[a-z0-9]\b)|"
    r"(?:[cms]-)+(?=[a-z0-9]>)|\^(?=[A-Z@\[\]\\^_?]))([A-Za-z0-9]\w*|[^\s\w`'\"<>])>?(?![\w+-])",
    re.IGNORECASE,
)
_KEY_NAMES = frozenset(
    "esc escape enter return tab space backspace delete del insert home end pageup pagedown up down left right "
    "f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12".split()
)


def _chord(m: re.Match) -> str:
    mods = {"ctrl"} if m[1] == "^" else {_MODIFIERS[p.lower()] for p in re.split(r"[-+]", m[1].rstrip("-+")) if p}
    return "+".join([*sorted(mods), m[2].lower()])


@dataclass(frozen=True)
class Specific:
    """One exact thing as written (lowercased, outer punctuation off) and its kind."""

    text: str
    kind: str


@lru_cache(maxsize=4096)
def specifics(text: str) -> tuple[Specific, ...]:
    """Every exact thing `text` names, in order of first appearance; code spans first."""
    text = matchable(text, lower=False)
    found: dict[str, Specific] = {}
    for span in _CODE_SPAN.findall(text):
        if not span.strip():
            continue  # `` ` ` ``: a blank code span (a space as a separator) names nothing
        if _KEY_CHORD.fullmatch(span) or span.lower().split()[0] in _KEY_NAMES or _KEY_SIGN.fullmatch(span):
            _add(found, span, CHORD)  # `Esc`, `Left arrow`, `Ctrl+C`: keys, as :kbd: marks them
            continue
        tokens = span.split()
        for raw in tokens:
            quoted = len(raw) > 2 and raw[0] == raw[-1] and raw[0] in "'\""
            kind = kind_of(raw.strip("'\"")) if quoted else kind_of(raw)
            if quoted and kind in (CODE, NAME):
                kind = STRING  # `'exit'`: an event or a value, named by its quoted string
            if kind and (len(tokens) == 1 or kind != CODE):
                _add(found, raw if kind == STRING else raw.strip("'\""), kind)
    for value in _DEFAULT_VALUE.findall(text):
        value = value.rstrip(".")
        if value.lower() not in _NOT_A_VALUE:
            _add(found, value, DEFAULT)
    prose = _CODE_SPAN.sub(" ", text)
    for name in _QUOTED_NAME.findall(prose):
        _add(found, name, CHORD if _KEY_CHORD.match(name) else kind_of(name) or STRING)
    for chord in _KEY_CHORD.findall(prose):
        _add(found, chord, CHORD)
    prose = _KEY_CHORD.sub(" ", prose)
    for token in _TOKEN.findall(prose):
        t = token.lstrip(_STRIP.replace(".", "")).rstrip(_STRIP).removesuffix("()")
        page = token.strip(_STRIP.replace(")", ""))
        if page.endswith(")") and _PAGE.fullmatch(page):
            t = page  # keep "ssh(1)" whole
        if len(t) < 2 or t.lower() in _ABBREVIATIONS:
            continue
        kind = kind_of(t, bare=True)
        if kind:
            _add(found, t, kind)
    return tuple(found.values())


@lru_cache(maxsize=4096)
def matchable(text: str, lower: bool = True) -> str:
    """`text` as specifics are looked up in: markup off, `X=[0|1]` spelled out as `X=0 X=1`."""
    out = _ALTERNATIVES.sub(lambda m: " ".join(f"{m[1]}={v}" for v in m[2].split("|")), plain(text))
    out = _CHORD.sub(_chord, out)
    return out.lower() if lower else out


def _add(found: dict[str, Specific], text: str, kind: str) -> None:
    key = text.lower()
    if key not in found:
        found[key] = Specific(key, kind)


def kind_of(token: str, bare: bool = False) -> str | None:
    """The kind of exact thing `token` is; None for a plain word. `bare`: outside backticks, so be stricter."""
    t = token.strip()
    if not t or _NUMERIC.fullmatch(t):
        return None  # numbers are judged as numbers
    if _OPTION.fullmatch(t):
        return OPTION
    if _SIGNAL.fullmatch(t.removeprefix("'").removesuffix("'")):
        return SIGNAL
    if _PAGE.fullmatch(t):
        return PAGE
    if _PATH.fullmatch(t) and not t.endswith("/"):
        return PATH
    if _CONSTANT.fullmatch(t) and (not bare or sum(c.isalpha() for c in t) >= 2):
        return CONSTANT
    if _KEY.fullmatch(t) or _CALL.fullmatch(t):
        return KEY if not _CALL.fullmatch(t) else NAME
    if "_" in t or _NAMEISH.search(t):
        return NAME
    return None if bare else CODE


def contains(haystack: str, needle: str) -> bool:
    """Whether lowercased `haystack` names `needle` as a whole thing, not as part of a longer one."""
    start = 0
    while (i := haystack.find(needle, start)) >= 0:
        before = haystack[i - 1] if i else " "
        after = haystack[i + len(needle)] if i + len(needle) < len(haystack) else " "
        if not (before.isalnum() or before in "_-$@") and not (after.isalnum() or after in "_"):
            return True
        start = i + 1
    return False
