"""Man pages: the roff of the man(7) macros read into a Layout, in Python, so no groff is needed.

`.SH`/`.SS` become headings (levels 1 and 2; no title heading, so a citation reads `ls(1) · OPTIONS`); each
item of a `.TP`/`.IP` list is one paragraph, its tag on the first line, so no chunk parts an option from its
text; `.nf`/`.EX` blocks are kept as preformatted text. Font, size and motion escapes are dropped and special
characters (`\\-`, `\\(em`, `\\[aq]`) become their Unicode. Macros this reader does not know are dropped with
their arguments: a page is never rejected for one. mdoc(7) pages (BSD's `.Dd`/`.Sh`) are read by the same reader,
with rag.ingest.formats.mdoc's inline macros.
Chosen over rendering with `man -Tutf8`/groff by measurement (docs/results.md, "Man pages").
"""

from __future__ import annotations

import re

from rag.ingest.formats import Layout
from rag.ingest.formats.mdoc import MDOC_INLINE, is_punctuation, mdoc_words
from rag.ingest.formats.rendered import Block, rendered_layout

SPECIAL = {
    "em": "\u2014", "en": "\u2013", "hy": "-", "mi": "-", "aq": "'", "dq": '"', "lq": "\u201c", "rq": "\u201d",
    "oq": "\u2018", "cq": "\u2019", "bu": "\u2022", "co": "\u00a9", "rg": "\u00ae", "tm": "\u2122", "ti": "~",
    "ha": "^", "ga": "`", "rs": "\\", "sl": "/", "mu": "\u00d7", "di": "\u00f7", "+-": "\u00b1", ">=": "\u2265",
    "<=": "\u2264", "!=": "\u2260", "->": "\u2192", "<-": "\u2190", "de": "\u00b0", "sc": "\u00a7", "ba": "|",
    "br": "|", "ul": "_", "ru": "_", "lB": "[", "rB": "]", "lC": "{", "rC": "}", "la": "\u27e8", "ra": "\u27e9",
    "Fo": "\u00ab", "Fc": "\u00bb", "fo": "\u2039", "fc": "\u203a", "pc": "\u00b7", "aa": "\u00b4", "at": "@",
    "sh": "#", "Do": "$", "ct": "\u00a2", "Po": "\u00a3", "Eu": "\u20ac", "eu": "\u20ac", "Ye": "\u00a5",
    "%": "", "dg": "\u2020", "dd": "\u2021", "ps": "\u00b6", "OK": "\u2713", "eq": "=", "pl": "+", "**": "*",
}
STRINGS = {"lq": "\u201c", "rq": "\u201d", "Aq": "'", "R": "\u00ae", "Tm": "\u2122", "C+": "C++", "Lq": "\u201c",
           "Rq": "\u201d", "aq": "'", "Ba": "|", "Am": "&", "Le": "\u2264", "Ge": "\u2265", "Pi": "\u03c0"}
_ESCAPE = re.compile(
    r"\\(?:"
    r"(?P<font>f(?:\[[^\]\n]*\]|\(..|.))"
    r"|(?P<size>s[-+]?(?:\d|\(\d\d|\[[^\]\n]*\]|'[^'\n]*'))"
    r"|(?P<special>\((?P<two>..)|\[(?P<name>[^\]\n]*)\])"
    r"|(?P<string>\*(?:\((?P<s2>..)|\[(?P<sn>[^\]\n]*)\]|(?P<s1>.)))"
    r"|(?P<register>n[-+]?(?:\(..|\[[^\]\n]*\]|.))"
    r"|(?P<quoted>[hvwlLNoXbDSRxZC]'[^'\n]*')"
    r"|(?P<bracketed>[mMFY](?:\[[^\]\n]*\]|\(..|.)|[kz].|[gV](?:\(..|\[[^\]\n]*\]|.))"
    r"|(?P<char>.)"
    r")"
)
_SIMPLE = {"-": "-", "e": "\\", "\\": "\\", "&": "", ")": "", " ": " ", "~": " ", "0": " ", "|": "", "^": "",
           "%": "", ":": "", "'": "\u00b4", "`": "`", ".": ".", "t": " ", "/": "", ",": "", "d": "", "u": "",
           "r": "", "p": "", "a": "", "!": "", "{": "", "}": "", "?": "", "E": "\\"}
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"[ \t]+")
_ARG = re.compile(r'"((?:[^"]|"")*)"?|((?:\\ |\S)+)')  # `\ ` (an unbreakable space) does not part arguments
HEADINGS = {"SH": 1, "SS": 2, "Sh": 1, "Ss": 2}
PARAGRAPH = frozenset({"PP", "LP", "P", "HP", "Pp", "Lp"})
FONTS = frozenset({"B", "I", "R", "SB", "SM", "BR", "RB", "IR", "RI", "BI", "IB", "CW", "CR", "CB", "CI"})
NOFILL_START, NOFILL_END = frozenset({"nf", "EX", "Bd"}), frozenset({"fi", "EE", "Ed"})
_TBL_TAB = re.compile(r"\btab\s*\((.)\)")
_DEFINITION_END = re.compile(r"^[.']\s*\.\s*$")
_DEFINES = re.compile(r"^[.']\s*(?:ds1?|as1?)\s")  # a string definition, which may go on past its line's end
MAX_TAG_CHARS = 80
MAX_DEFINITION_LINES = 500  # the longest .de in /usr/share/man/man1 is far shorter; an unclosed one must not eat the page
MAX_NESTING = 8  # `.if n .if n ...` on one line: deeper than this is not read (a hostile page could nest thousands)


def unescape(text: str, strings: dict[str, str] | None = None) -> str:
    """Text with roff escapes read: special characters as Unicode, fonts, sizes and motions dropped.

    `strings`: those the page defined with `.ds` (sed.1 writes `\\*(sd` for its own name), over the usual ones.
    """
    if "\\" not in text:
        return _CONTROLS.sub("", text)
    if strings:
        return _CONTROLS.sub("", _ESCAPE.sub(lambda m: _escape(m, strings), text))
    return _CONTROLS.sub("", _ESCAPE.sub(_escape, text))


def _escape(m: re.Match, strings: dict[str, str] | None = None) -> str:
    if m.group("special"):
        name = m.group("two") or m.group("name") or ""
        if name.startswith("u") and len(name) >= 5:
            try:
                return "".join(chr(int(part, 16)) for part in name[1:].split("_"))
            except (ValueError, OverflowError):
                return ""
        return SPECIAL.get(name, "")
    if m.group("string"):
        name = m.group("s2") or m.group("sn") or m.group("s1") or ""
        return strings[name] if strings and name in strings else STRINGS.get(name, "")
    if m.group("char") is not None:
        return _SIMPLE.get(m.group("char"), m.group("char"))
    return ""


def split_args(rest: str) -> list[str]:
    """A macro's arguments: space separated, "double quoted" with spaces, `""` a quote inside quotes."""
    return [m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2) for m in _ARG.finditer(rest)]


def _strip_comment(line: str) -> str:
    i = line.find('\\"')
    while i > 0 and line[i - 1] == "\\" and (i < 2 or line[i - 2] != "\\"):  # `\\"` is a backslash and a quote
        i = line.find('\\"', i + 1)
    return line if i < 0 else line[:i]


class _Reader:
    """Macros in, blocks out: text gathers into the open paragraph until a macro closes it."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.words: list[str] = []
        self.tag: str | None = None  # the tag of the open .TP/.IP item
        self.tag_level = 0  # its depth in lists: one more than the .RS depth it was opened at
        self.depth = 0  # open .RS
        self.continued = False  # the open paragraph is an .IP with no tag: more text of the item above
        self.line = 0
        self.nofill = False
        self.pending_tag = 0  # .TP: the next text line is the tag
        self.pending_heading = 0  # .SH with no arguments: the next text line is the title
        self.skip_until = ""  # inside .de/.ig: skip until this line
        self.page_name = ""  # mdoc: the first `.Nm` argument
        self.strings: dict[str, str] = {}  # defined by the page with .ds
        self.skipped_lines = 0
        self.branch_depth = 0  # open braces of a skipped conditional block
        self.table = ""  # in a tbl table: "format" (its option and format lines) or "data"
        self.tab = "\t"  # what separates a table's cells: tab(:) says ":"
        self.stacking = False  # after `.PD 0`: an item with a tag and no text takes the next item's tag too
        self.taken: bool | None = None  # whether the last one-line `.ie` took its branch (None: not known)
        self.nesting = 0  # one-line conditionals inside one another, read so far on this line

    def un(self, text: str) -> str:
        return unescape(text, self.strings)

    def flush(self) -> None:
        if self.nofill:
            text = "\n".join(self.words).strip("\n")
            if text.strip():
                self.blocks.append(Block("pre", text.rstrip(), self.line or 1))
        else:
            text = _SPACES.sub(" ", " ".join(self.words).replace("\0", "")).strip()
            tag = _SPACES.sub(" ", self.tag or "").strip()
            if tag and text:
                text = f"{tag}\n{text}"
            elif tag:
                text = tag
            if text:
                level = self.tag_level if tag else self.depth + self.continued
                self.blocks.append(Block("para", text, self.line or 1, level, tag))
        self.words.clear()
        self.tag = None
        self.line = 0

    def text(self, words: str, n: int) -> None:
        if self.pending_heading:
            self.heading(self.pending_heading, words, n)
            return
        if self.pending_tag:
            self.pending_tag = 0
            self.tag = (self.tag or "") + words  # after .TQ or a stacked tag, one more name for the same text
            self.line = self.line or n
            return
        if not self.line:
            self.line = n
        if self.words and not self.nofill and self.words[-1].endswith("\0"):  # \c joins the next line
            self.words[-1] = self.words[-1][:-1] + words
        else:
            self.words.append(words)

    def heading(self, level: int, title: str, n: int) -> None:
        self.flush()
        self.pending_heading = 0
        title = _SPACES.sub(" ", title).strip()
        self.depth, self.continued = 0, False  # a section starts at the left margin
        if title:
            self.blocks.append(Block("heading", title, n, level))

    def macro(self, name: str, args: list[str], n: int, rest: str = "") -> None:
        if name in HEADINGS:
            if args:
                self.heading(HEADINGS[name], " ".join(self.un(a) for a in args), n)
            else:
                self.flush()
                self.pending_heading = HEADINGS[name]
        elif name == "PD":
            self.stacking = bool(args) and args[0] == "0"
        elif name in PARAGRAPH or name in ("TP", "TQ", "IP", "It"):
            stacked = name == "TQ" or (self.stacking and (name == "TP" or (name == "IP" and bool(args))))
            if stacked and self.tag is not None and not self.words:  # one more tag for the same text
                if name == "IP":
                    self.tag += ", " + self.un(args[0])
                    return
                self.pending_tag = 1
                self.tag += ", "
                return
            self.flush()
            self.tag_level = self.depth + 1
            self.continued = name == "IP" and not args
            if name == "TP":
                self.pending_tag = 1
            elif name == "IP" and args:
                self.tag = self.un(args[0])
                self.line = n
            elif name == "It" and args:
                self.tag = mdoc_words(args, self.un)
                self.line = n
        elif name in FONTS:
            self.text(_font_words(name, args, self.un), n)
        elif name in ("sp", "br", "RS", "RE", "in", "ti") and self.nofill:
            self.words.append("")
        elif name == "RS" and self.words and self.tag is None and len(" ".join(self.words)) <= MAX_TAG_CHARS:
            # Asciidoctor's lists: a term alone on its line, then its text indented: the term is a tag.
            self.tag, self.words = " ".join(self.words), []
            self.tag_level = self.depth + 1
            self.depth += 1
        elif name == "RS":
            self.depth += 1
        elif name in ("sp", "RE"):
            self.flush()
            if name == "RE":
                self.depth = max(0, self.depth - 1)
        elif name in NOFILL_START:
            self.flush()
            self.nofill = True
        elif name in NOFILL_END:
            self.flush()
            self.nofill = False
        elif name in ("UR", "MT") and args:
            self.text(f"<{self.un(args[0])}>", n)
        elif name in ("UE", "ME") and args:
            self.text(self.un(" ".join(args)), n)
        elif name == "SY" and args:
            self.flush()
            self.text(self.un(args[0]), n)
        elif name == "OP" and args:
            self.text("[" + " ".join(self.un(a) for a in args) + "]", n)
        elif name in ("el", "ie", "if") and "\\{" in rest and (name == "el" or args[:1] == ["t"]):
            # The branch for troff (`.if t`) or the `.el` of an `.ie` whose nroff branch was read: Asciidoctor
            # writes every bullet twice, once in each.
            self.branch_depth = rest.count("\\{") - rest.count("\\}")
            self.taken = False if name == "ie" else None
        elif name == "ie" and "\\{" in rest:  # a block this reader reads, as nroff would
            self.taken = True
        elif name in ("el", "ie", "if") and "\\{" not in rest:
            self.branch(name, rest, n)
        elif name in ("TS", "T&"):
            self.flush()
            self.table, self.tab = "format", "\t"
        elif name == "TE":
            self.flush()
            self.table = ""
        elif name in ("ds", "ds1") and args:
            value = rest.strip().partition(" ")[2].lstrip()
            self.strings[args[0]] = self.un(value.removeprefix('"'))
        elif name in ("de", "de1", "am", "ig"):
            self.skip_until = ".." if name != "ig" or not args else "." + args[0]
        elif name in MDOC_INLINE:
            if name == "Nm":  # mdoc names the page once and then writes a bare `.Nm` for it
                self.page_name = self.page_name or (args[0] if args and not is_punctuation(args[0]) else "")
                args = args if args and not is_punctuation(args[0]) else [self.page_name, *args]  # `.Nm .`
            self.text(mdoc_words([name, *args], self.un), n)
        # Every other macro (.TH, .ad, .ne, .if with a test not known, pod2man's .IX, ones a page defines itself)
        # holds no text.

    def branch(self, name: str, rest: str, n: int) -> None:
        """A one-line conditional, read where nroff run as groff takes it: mawk(1) defines the quotes it writes
        as `\\*(``` with `.ie \\n(.g .ds `` \\(lq`. `.el` takes its branch where the last `.ie` surely did not."""
        if name == "el":
            take, body, self.taken = self.taken is False, rest, None
        else:
            condition, _, body = rest.strip().partition(" ")
            known = _condition(condition)
            take = known is True
            if name == "ie":
                self.taken = known
        if take and body.strip() and self.nesting < MAX_NESTING:
            self.nesting += 1
            try:
                self.feed(body.strip(), n)
            finally:
                self.nesting -= 1

    def table_line(self, line: str, n: int) -> None:
        """A line of a tbl(1) table (`.TS` to `.TE`): options and format lines dropped, cells joined by ` | `."""
        if self.table == "format":
            tab = _TBL_TAB.search(line)
            self.tab = tab.group(1) if tab else self.tab
            if line.rstrip().endswith("."):
                self.table = "data"
            return
        cells = [self.un(c.replace("T{", "").replace("T}", "")).strip() for c in line.split(self.tab)]
        text = " | ".join(c for c in cells if c and c not in ("_", "="))
        if text and text not in ("T{", "T}", "_", "="):
            self.text(text, n)

    def feed(self, line: str, n: int) -> None:
        if self.branch_depth:  # inside a conditional block that nroff would not take
            self.branch_depth += line.count("\\{") - line.count("\\}")
            return
        if self.skip_until:
            # A definition ends at `..` (also written `.  .`); one never closed ends after MAX_DEFINITION_LINES.
            self.skipped_lines += 1
            ends = _DEFINITION_END.match(line) if self.skip_until == ".." else line.split()[:1] == [self.skip_until]
            if ends or self.skipped_lines > MAX_DEFINITION_LINES:
                self.skip_until, self.skipped_lines = "", 0
            return
        if line.startswith("\\#"):  # groff's comment that takes its line's end with it
            return
        line = _strip_comment(line)
        if self.table and not line.startswith((".TE", ".T&")) and not (line[:1] in (".", "'") and self.table == "data"):
            self.table_line(line, n)
            return
        if line[:1] in (".", "'"):
            body = line[1:].lstrip()
            name, _, rest = body.partition(" ")
            if "\t" in name:
                name, _, more = name.partition("\t")
                rest = more + " " + rest
            if name:
                self.macro(name, split_args(rest), n, rest)
            return
        if self.nofill:
            if not self.line:
                self.line = n
            self.words.append(self.un(line.replace("\\c", "")).rstrip())
            return
        if not line.strip():
            self.flush()  # a blank line in fill mode is a paragraph break
            return
        joined = line.rstrip().endswith("\\c")
        words = self.un(line.rstrip()[:-2] if joined else line)
        self.text(words + ("\0" if joined else ""), n)


def _continues(line: str) -> bool:
    """Whether a line ends in a backslash that escapes its newline (an odd number of them)."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _condition(condition: str) -> bool | None:
    """Whether nroff run as groff takes a conditional: `n` and `\\n(.g` yes, `t` no, `!` the opposite; None where
    the condition is any other test (a register, a string comparison), which this reader does not evaluate."""
    negated = condition.startswith("!")
    value = {"n": True, "t": False, "\\n(.g": True, "\\n[.g]": True}.get(condition[negated:])
    return None if value is None else value != negated


def _font_words(name: str, args: list[str], un=unescape) -> str:
    """`.B a b` is `a b`; `.BR a b` alternates fonts, so its words are joined without spaces: `a(1)`."""
    words = [un(a) for a in args]
    return "".join(words) if len(name) == 2 and name not in ("SB", "SM", "CW") else " ".join(words)


def man_layout(text: str) -> Layout:
    """The Layout of a man(7) page (also of an mdoc(7) page, read with the same macros where they agree)."""
    reader = _Reader()
    lines = text.split("\n")
    n = 0
    while n < len(lines):
        first, parts = n, [lines[n]]
        if _DEFINES.match(parts[0]):  # `.ds X text \` goes on, up to MAX_DEFINITION_LINES lines
            while _continues(parts[-1]) and n + 1 < len(lines) and len(parts) < MAX_DEFINITION_LINES:
                parts[-1] = parts[-1][:-1]
                n += 1
                parts.append(lines[n])
        reader.feed("".join(parts), first + 1)
        n += 1
    reader.flush()
    return rendered_layout(reader.blocks)
