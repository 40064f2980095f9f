"""The docs cannot drift: docs/cli.md is what the parser prints, the README stays a front door, links resolve."""

from __future__ import annotations

import difflib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_MAX_LINES = 250
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)]*?)(?:\s+\"[^\"]*\")?\)")  # the target, without a "title"
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def _gen_cli():
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def _prose(text: str) -> str:
    """Markdown without fenced blocks and code spans, where a `[x](y)` or `# x` is not a link or a heading."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(page: Path) -> list[str]:
    """Each relative link of the page whose file, or heading in it, does not exist."""
    broken = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no heading with that anchor in {file.name})")
    return broken


def test_docs_cli_md_is_what_the_parser_prints_now():
    gen_cli = _gen_cli()
    written = gen_cli.CLI_MD.read_text(encoding="utf-8")
    made_with = re.search(r"with Python (\d+\.\d+)'s argparse", written)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    if made_with and made_with.group(1) != python:
        pytest.skip(
            f"docs/cli.md was generated with Python {made_with.group(1)}, whose argparse formats help its own way"
        )
    expected = gen_cli.render()
    diff = "".join(
        list(difflib.unified_diff(written.splitlines(True), expected.splitlines(True), "docs/cli.md", "parser"))[:40]
    )
    assert written == expected, f"docs/cli.md is out of date: run `{gen_cli.COMMAND}` and commit it\n{diff}"


def test_cli_md_has_every_subcommand():
    from agent.surfaces.commands import COMMANDS

    headings = set(HEADING.findall(FENCE.sub("", (ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))))
    assert {f"smoldocs {name}" for name in COMMANDS} | {"smoldocs"} <= headings


def test_readme_is_a_front_door_of_at_most_250_lines():
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (limit {README_MAX_LINES}): move sections to docs/"


def test_every_relative_link_in_the_readme_and_docs_resolves():
    broken = {page.relative_to(ROOT).as_posix(): broken_links(page) for page in _pages()}
    assert not {page: links for page, links in broken.items() if links}


def test_the_readme_links_every_docs_page():
    linked = {Path(t.partition("#")[0]).name for t in LINK.findall(_prose(README.read_text(encoding="utf-8")))}
    assert {page.name for page in (ROOT / "docs").glob("*.md")} <= linked


def test_a_broken_link_and_a_missing_anchor_are_reported(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Where `files` live\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#where-files-live) [gone](missing.md) [bad](other.md#nowhere) [web](https://example.org)\n"
        '[titled](other.md "Other") [spaced](other.md#where files-live)\n'
        "```sh\n[not a link](nowhere.md)\n```\n`[code](nowhere.md)`\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md (no such file)",
        "other.md#nowhere (no heading with that anchor in other.md)",
        "other.md#where files-live (no heading with that anchor in other.md)",
    ]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("For other agents: `smoldocs mcp` and `smoldocs check`", "for-other-agents-smoldocs-mcp-and-smoldocs-check"),
        ("Big folders: ready at once, fresh while you work", "big-folders-ready-at-once-fresh-while-you-work"),
        ("Outdated pages, disagreeing sources, near-duplicates", "outdated-pages-disagreeing-sources-near-duplicates"),
    ],
)
def test_slug_matches_githubs_anchors(heading, anchor):
    assert slug(heading) == anchor
