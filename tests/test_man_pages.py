"""Man pages and info manuals as sources: roff read in Python, `.so` followed within the tree, hostile pages skipped."""

from __future__ import annotations

import gzip
import shutil
import threading
import time
from pathlib import Path

import pytest

from agent.cli import main
from agent.surfaces.commands import common
from json_support import read_output
from fakes import HashEmbedder, WordTokenizer
from rag.errors import DocsNotFound
from rag.ingest.chunking import chunk_layout
from rag.ingest.corpus import load_corpus
from rag.ingest.formats import parse_text
from rag.ingest.formats.manuals import display_name, man_parts
from rag.ingest.formats.mdoc import is_mdoc
from rag.ingest.formats.roff import man_layout, unescape
from rag.ingest.man_pages import MAX_MAN_PAGE_BYTES, ManSource, man_trees, parse_sections

DATA = Path(__file__).parent / "data"
MAN = DATA / "manpages"


@pytest.fixture
def man_tree(tmp_path) -> Path:
    tree = tmp_path / "man"
    shutil.copytree(MAN, tree)
    return tree


def _page(name: str) -> str:
    return (MAN / name).read_text()


def _docs(corpus) -> dict[str, str]:
    return {d.doc_id: d.text for d in corpus.documents}


def test_sections_become_headings_and_chunks_cite_the_page_name_and_section(real_tokenizer):
    chunks = chunk_layout("man1/lsx.1", man_layout(_page("man1/lsx.1")), real_tokenizer)
    by_heading = {c.heading: c for c in chunks}
    assert {"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "OPTIONS > Exit status:", "SEE ALSO"} <= set(by_heading)
    assert {c.uri for c in chunks} == {"lsx(1)"}
    assert "sort by time, newest first" in by_heading["OPTIONS"].text
    assert by_heading["OPTIONS"].line_start > 1  # lines of the roff file, not of the rendered text


def test_no_chunk_parts_an_option_from_its_description(real_tokenizer):
    """Even at a budget that forces a chunk per option, each `.TP` tag keeps the start of its text."""
    chunks = chunk_layout("man1/lsx.1", man_layout(_page("man1/lsx.1")), real_tokenizer, max_tokens=24)
    pairs = {"-a, --all": "do not ignore", "-t": "sort by time", "--time-style=TIME_STYLE": "time/date format"}
    for tag, text in pairs.items():
        holding = [c for c in chunks if c.text.startswith(tag + "\n") or f"\n{tag}\n" in c.text]
        assert holding and all(text in c.text for c in holding), (tag, [c.text for c in chunks])


def test_a_chunk_inside_an_option_keeps_the_option_and_the_command_in_its_heading_path():
    words = " ".join(["text"] * 12)
    page = f""".TH SHX 1
.SH BUILTINS
.TP
\\fBread\\fP [\\-rs] name
Reads {words}.
.RS
.TP
.B \\-s
Silent {words}.
.IP
Echo {words}.
.PP
More {words}.
.RE
.TP
.B trap
Runs {words}.
.PP
After {words}.
"""
    chunks = chunk_layout("man1/shx.1", man_layout(page), WordTokenizer(), max_tokens=16)
    path = {c.text.split()[0]: c.heading_path for c in chunks}
    assert chunks[0].text.endswith("read [-rs] name") and path["trap"] == ("BUILTINS",)  # items show their terms
    assert path["Reads"] == path["-s"] == ("BUILTINS", "read [-rs] name")
    assert path["Echo"] == ("BUILTINS", "read [-rs] name", "-s")  # an .IP with no tag goes on with the item
    assert path["More"] == ("BUILTINS", "read [-rs] name")  # .PP inside .RS ends the inner list only
    assert path["After"] == ("BUILTINS",)
    assert chunks[0].uri == "shx(1)"


def test_roff_escapes_and_fonts_become_plain_text():
    text = man_layout(_page("man1/lsx.1")).text
    assert "--time-style=TIME_STYLE" in text and "below \u2014 the default is 'locale'" in text
    assert "\\f" not in text and "\\-" not in text and "\\(" not in text
    assert "\u2022\nan item with a bullet tag" in text
    assert "dir(1), vdir(1)" in text  # .BR joins its words without a space
    assert unescape(r"\[u00E9]t\(em \s-1SMALL\s0 a\e b") == "\u00e9t\u2014 SMALL a\\ b"


def test_unknown_macros_and_control_bytes_are_dropped_and_the_text_kept():
    text = man_layout(_page("man1/unknown.1")).text
    assert "Plain text survives \u201cquoted\u201d and \u00e9t" in text and "SMALL" in text
    assert "nobody defines" in text
    assert "secret macro body" not in text and "unknown macro" not in text and "another" not in text
    assert "\x1b" not in text and "\x07" not in text and "a[31mred and that is all" in text


def test_an_mdoc_page_is_read_with_its_options():
    page = _page("man1/bsdtool.1")
    assert is_mdoc(page) and not is_mdoc(_page("man1/lsx.1"))
    text = man_layout(page).text
    assert "The bsdtool utility copies files." in text
    assert "-x\nDo not cross mount points." in text and "-o file\nWrite to file." in text
    assert "lsx(1)" in text
    assert "bsdtool \u2013 a page in the mdoc macros" in text  # .Nd


def test_mdoc_names_its_page_before_punctuation():
    text = man_layout(".Dd May 1, 2024\n.Sh NAME\n.Nm tmux\n.Sh DESCRIPTION\nSessions live under the management of\n"
                      ".Nm .\nEach session has windows.\n").text
    assert "under the management of tmux. Each session" in text


# Four ways man pages give one text two option names (gpg, zip, pod2man's strings and wget, bash), and what
# else wrecked their text: an escaped space inside a macro's argument, groff's \# comments, strings defined in
# one-line conditionals, a string definition that goes on past its line.
STACKED = r"""
.TH STACKED 1
\#  Setup //////////////////////////////
.ie \n(.g .ds `` \(lq
.el       .ds `` ``
.ie \n(.g .ds '' \(rq
.el       .ds '' ''
.ds ZX Accessing smaps is costly \
and needs root
.SH OPTIONS
.TP
.B  --batch
.TQ
.B  --no-batch
Use batch mode.
.TP
.PD 0
.B \-e
.TP
.PD
.B \-\-encrypt
Encrypt the contents.
.IP "\fB\-s\fR" 4
.IX Item "-s"
.PD 0
.IP "\fB\-\-output\-separator\fR" 4
.IX Item "--output-separator"
.PD
Delimit strings with this.
.TP
.B \-\-temp-path\ \fRpath
Use path for temporary files.
.TP
.B \-q
Quiet.
.TP
.B \-v
Verbose.
.PP
Setting FS = \*(``:\*('' splits on colons. \*(ZX.
.if n Shown by nroff.
.if t Shown by troff only.
.ie t Troff again.
.el Nroff after all.
"""


def test_stacked_option_names_stay_with_their_text_and_roff_leftovers_go():
    text = man_layout(STACKED).text
    assert "--batch, --no-batch\nUse batch mode." in text
    assert "-e, --encrypt\nEncrypt the contents." in text
    assert "-s, --output-separator\nDelimit strings with this." in text
    assert "--temp-path path\nUse path" in text and "\\" not in text
    assert "-q\nQuiet." in text and "-v\nVerbose." in text  # without .PD 0, items stay apart
    assert "Setting FS = \u201c:\u201d splits on colons. Accessing smaps is costly and needs root." in text
    assert "Setup" not in text and "////" not in text
    assert "Shown by nroff." in text and "Nroff after all." in text
    assert "troff only" not in text and "Troff again" not in text


def test_a_folder_of_man_pages_skips_hostile_ones_each_with_its_reason(man_tree):
    corpus = load_corpus(man_tree)
    docs = _docs(corpus)
    assert set(docs) == {"man1/bsdtool.1", "man1/lsx.1", "man1/lsxall.1", "man1/tabled.1", "man1/unknown.1", "man1/withfrag.1",
                         "man1/zipped.1.gz", "man8/toold.8"}
    assert corpus.skipped == {".so loop": 2, ".so outside the man tree": 2, "binary": 1, "damaged .gz": 1,
                              "man page alias (.so)": 2, "not text": 1, "translated man page": 1}
    assert not any("root:" in text for text in docs.values())
    assert "FRAGVAR" in docs["man1/withfrag.1"]  # a .so line inside a page includes the fragment
    # ... but not a page indexed as itself: a meta page like zshall(1) would only duplicate it
    assert "FRAGVAR" in docs["man1/lsxall.1"] and "sort by time" not in docs["man1/lsxall.1"]
    assert "read the gzipped page" in man_layout(docs["man1/zipped.1.gz"]).text


def test_an_alias_of_a_page_outside_the_chosen_sections_is_read_as_that_page(man_tree):
    corpus = load_corpus(ManSource((man_tree,), parse_sections("1")))
    docs = _docs(corpus)
    assert "man8/toold.8" not in docs and "do not descend into directories" in docs["man1/toold-link.1"]
    assert "man1/lsx-alias.1" not in docs  # its page is read anyway


def test_a_so_link_never_leaves_the_man_tree_even_through_a_symlink(man_tree):
    (man_tree / "man1" / "out").symlink_to("/etc")
    (man_tree / "man1" / "sneaky.1").write_text(".TH S 1\n.SH NAME\n.so man1/out/passwd\n")
    corpus = load_corpus(man_tree)
    assert "man1/sneaky.1" not in _docs(corpus) and corpus.skipped[".so outside the man tree"] == 3


def test_translated_pages_are_skipped_unless_their_own_tree_is_given(man_tree):
    assert "de/man1/lsx.1" not in _docs(load_corpus(man_tree))
    german = load_corpus(man_tree / "de")
    assert "Verzeichnisinhalte" in _docs(german)["man1/lsx.1"]
    assert display_name("de/man1/lsx.1") == "lsx(1) [de]" and man_parts("share/man/man1/ls.1.gz") == ("ls", "1", "")


def test_a_huge_page_and_a_gzip_bomb_are_skipped_as_too_large(man_tree):
    filler = ".PP\n" + "word " * 1000 + "\n"
    big = ".TH HUGE 1\n.SH NAME\nhuge\n" + filler * (10 * 2**20 // len(filler))  # 10 MB
    (man_tree / "man1" / "huge.1").write_text(big)
    (man_tree / "man1" / "bomb.1.gz").write_bytes(gzip.compress(big.encode() * 3))
    corpus = load_corpus(man_tree)
    assert corpus.skipped[f"too large (over {MAX_MAN_PAGE_BYTES / 2**20:g} MB)"] == 2
    assert "man1/huge.1" not in _docs(corpus) and "man1/bomb.1.gz" not in _docs(corpus)


def test_man_sections_and_the_man_path():
    assert parse_sections("1,8") == {"1", "8"} and parse_sections("") == frozenset()
    with pytest.raises(DocsNotFound, match="--man takes man sections such as 1 or 1,8"):
        parse_sections("1;rm")
    assert man_trees({"MANPATH": f"{MAN}:{MAN}/../nowhere:{MAN}"}) == (MAN.resolve(),)


def test_info_nodes_become_sections_cited_as_the_manual(real_tokenizer):
    corpus = load_corpus(DATA / "info")
    assert {d.doc_id for d in corpus.documents} == {"minicore.info", "minicore-z.info.gz"}
    layout = parse_text("minicore.info", _docs(corpus)["minicore.info"])
    chunks = chunk_layout("minicore.info", layout, real_tokenizer)
    assert {c.uri for c in chunks} == {"(minicore)"}
    assert {c.heading for c in chunks} == {"Top", "lsx invocation", "lsx invocation > 1.1 Which files are listed",
                                           "Sorting"}
    sort = next(c for c in chunks if c.heading == "lsx invocation")
    assert "'--sort=time'\n     Sort by modification time" in sort.text
    assert not any("Copyright" in c.text or "Tag Table" in c.text or "\x00" in c.text for c in chunks)


@pytest.fixture
def fake_models(monkeypatch):
    monkeypatch.setattr(common, "load_tokenizer_from_args", lambda args: WordTokenizer())
    monkeypatch.setattr(common, "load_embedder_from_args", lambda args: HashEmbedder(512))


def test_search_man_finds_an_option_of_the_chosen_section(fake_models, man_tree, monkeypatch, capsys):
    monkeypatch.setenv("MANPATH", str(man_tree))
    assert main(["search", "--man", "8", "descend directories other filesystems", "--json"]) == 0
    hits = read_output("search", capsys.readouterr().out)["hits"]
    assert hits[0]["uri"] == "toold(8)" and hits[0]["heading"] == "OPTIONS"
    assert {h["doc_id"] for h in hits} == {"man8/toold.8"}  # --man 8: no page of section 1


def test_a_bad_man_section_is_one_clear_line(man_tree, monkeypatch, capsys):
    monkeypatch.setenv("MANPATH", str(man_tree))
    with pytest.raises(SystemExit) as exc:
        main(["search", "--man", "1;8", "x"])
    assert exc.value.code == 2
    assert "--man takes man sections such as 1 or 1,8" in capsys.readouterr().err


def test_asciidoctor_and_sed_shapes_definitions_strings_tables_and_terms():
    text = man_layout(_page("man1/tabled.1")).text
    assert "tz=UTC\nThis option disables the conversion" in text  # a term over .RS is the tag of its text
    assert "The tabled program reads its tables:" in text  # .ds sd, written \*(sd
    assert "ext4 | ext4(5)" in text and "Filesystem" in text and "allbox" not in text and "T{" not in text
    assert "a page with tables" in text and "ad l" not in text  # `.  .` closes the .am definition


def test_only_the_nroff_branch_of_a_conditional_is_read():
    """Asciidoctor writes each bullet for nroff (`.ie n \\{`) and again for troff (`.el \\{`): one bullet shows."""
    text = man_layout(_page("man1/tabled.1")).text
    assert "\u2022Architectures (arch) is a multivalue option" in text and text.count("\u2022") == 1


def test_search_info_finds_a_node_cited_as_the_manual(fake_models, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("INFOPATH", str(DATA / "info"))
    assert main(["search", "--info", "sort modification time", "--index", str(tmp_path / "i"), "--json"]) == 0
    hit = read_output("search", capsys.readouterr().out)["hits"][0]
    assert hit["uri"] in ("(minicore)", "(minicore-z)") and hit["heading"] == "lsx invocation"


def test_a_live_index_of_man_pages_is_not_watched(man_tree, tmp_path):
    """--man's root can be "/" when manpath has several trees: the chat app must never watch it."""
    from rag.indexing.live import open_live_index

    live = open_live_index(ManSource((man_tree,)), WordTokenizer(), HashEmbedder(64), index_dir=tmp_path / "i")
    try:
        assert live.watcher is None and "lsx(1)" in {c.uri for c in live.chunks}
    finally:
        live.close()


def test_a_chat_session_over_man_pages_reads_only_the_chosen_sections(man_tree, tmp_path):
    """The chat app passes --man's pages on as they are: as a folder they would be every page (or all of /)."""
    from agent.session import open_session
    from fakes import ScriptedChatModel

    source = ManSource((man_tree,), parse_sections("8"))
    session = open_session(source, open_model=ScriptedChatModel, live=True, index_dir=tmp_path / "i",
                           open_embedder=lambda: HashEmbedder(64))
    try:
        assert {c.doc_id for c in session.retriever.chunks} == {"man8/toold.8"}
    finally:
        session.close()


@pytest.mark.real
def test_mcp_serves_man_pages_beside_a_folder_inside_its_collection_filter(man_tree, tmp_path, monkeypatch):
    """Over the SDK's stdio client: `--docs notes --man 8 --collection man` searches, lists and reads only the man
    pages, a page read back as text (not roff, not gzip); the notes are there, outside the filter."""
    from mcp_support import excerpts, mcp_client

    monkeypatch.setenv("MANPATH", str(man_tree))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "disks.md").write_text("# Disks\n\nStay on one filesystem when you back up the grey disk.\n")
    argv = ("--docs", str(notes), "--man", "8", "--collection", "man", "--index", str(tmp_path / "idx"))
    with mcp_client(*argv) as client:
        error, text = client.call("search_docs", {"query": "stay on one filesystem", "k": 5})
        assert not error and excerpts(text) and set(excerpts(text).values()) == {"man:man8/toold.8#1"}, text
        assert "toold(8)" in text
        error, text = client.call("search_docs", {"query": "grey disk", "collections": ["notes"]})
        assert error and "unknown collection 'notes': the collections are man" in text
        names = [r.name for r in client.list_resources().resources]
        assert names == ["man:man8/toold.8"]
        page = client.read_resource(f"smoldocs://doc/{names[0]}").contents[0].text
        assert "stay on one filesystem: do not descend into directories" in page and "\\-" not in page
    with mcp_client("--docs", str(notes), "--man", "8", "--index", str(tmp_path / "idx")) as client:
        error, text = client.call("search_docs", {"query": "grey disk filesystem", "collections": ["notes"]})
        assert not error and set(excerpts(text).values()) == {"notes:disks.md#0"}


def test_served_man_pages_notice_a_package_install_and_read_back_as_text(man_tree, tmp_path, monkeypatch):
    """`smoldocs mcp --man 8` stats the section folders before each call: a page a package adds is searchable at
    the next call, and its resource is the page's text."""
    from agent.config import settings_from
    from agent.surfaces.mcp_server import FolderIndex
    from agent.opening import Loaders, open_models
    from rag.ingest.man_pages import man_source

    monkeypatch.setenv("MANPATH", str(man_tree))
    settings = settings_from({"docs": man_source("8"), "index": str(tmp_path / "i")})
    served = FolderIndex(settings, open_models(settings, Loaders(tokenizer=lambda s: WordTokenizer(),
                                                                 embedder=lambda s: HashEmbedder(64))))
    try:
        index, note = served.current()
        assert index.doc_ids == ["man8/toold.8"] and served.refreshes == 0
        (man_tree / "man8" / "newd.8").write_text(".TH NEWD 8\n.SH NAME\nnewd \\- a daemon a package just added\n")
        index, note = served.current()
        assert sorted(index.doc_ids) == ["man8/newd.8", "man8/toold.8"] and note and "refreshed" in note
        assert "newd - a daemon a package just added" in (served.document("man8/newd.8") or "")
        assert served.document("man1/lsx.1") is None  # not of section 8
    finally:
        served.close()


class SlowTokenizer(WordTokenizer):
    """Counts as WordTokenizer does, 20 ms a call: a page takes long enough to chunk that a budget runs out."""

    def count(self, text: str) -> int:
        import time

        time.sleep(0.02)
        return super().count(text)


def test_a_one_shot_search_over_man_pages_answers_over_the_pages_read_so_far(man_tree, tmp_path, monkeypatch, capsys):
    """`search --man` reads pages for at most its budget, answers over them with one notice, and the next run reads
    on where it stopped, until every page is read; --embed-budget all reads them all at once."""
    from agent import opening

    monkeypatch.setattr(common, "load_tokenizer_from_args", lambda settings: SlowTokenizer())
    monkeypatch.setattr(common, "load_embedder_from_args", lambda settings: HashEmbedder(64))
    monkeypatch.setattr(opening, "ONE_SHOT_MAN_CHUNK_BUDGET", 0.01)
    monkeypatch.setenv("MANPATH", str(man_tree))
    argv = ["search", "descend directories other filesystems", "--man", "--index", str(tmp_path / "i"), "--json"]
    unread = []
    for _ in range(20):
        assert main(argv) == 0
        out, err = capsys.readouterr()
        notices = [line for line in err.splitlines() if "pages not read yet" in line]
        if not notices:
            break
        assert len(notices) == 1 and "the next run reads on" in notices[0]
        unread.append(int(notices[0].split("pages not read yet")[0].split()[-1]))
    assert len(unread) >= 2 and unread == sorted(unread, reverse=True) and len(set(unread)) == len(unread)
    assert read_output("search", out)["hits"][0]["uri"] == "toold(8)"  # every page read: toold(8) among them
    assert main([*argv, "--index", str(tmp_path / "all"), "--embed-budget", "all"]) == 0
    out, err = capsys.readouterr()
    assert "pages not read yet" not in err and read_output("search", out)["hits"][0]["uri"] == "toold(8)"


def test_a_warm_live_start_opens_the_stored_index_as_it_is_and_reads_new_pages_behind(man_tree, tmp_path, monkeypatch):
    """With an index stored, the chat app and MCP are ready without chunking (which would build BM25 again over
    every stored chunk: 29 s at 84k chunks of man1); a page a package added since is chunked behind."""
    from rag.indexing import hybrid
    from rag.indexing.build import open_index
    from rag.indexing.live import open_live_index

    source = ManSource((man_tree,), parse_sections("1,8"))
    open_index(source, WordTokenizer(), HashEmbedder(64), index_dir=tmp_path / "i")
    (man_tree / "man8" / "newd.8").write_text(".TH NEWD 8\n.SH NAME\nnewd \\- a daemon a package just added\n")
    built = []
    real = hybrid.BM25Index.__init__
    # which thread built BM25: the reading behind may get there before the first snapshot on a busy machine
    monkeypatch.setattr(hybrid.BM25Index, "__init__",
                        lambda self, *a, **kw: built.append(threading.current_thread() is threading.main_thread())
                        or real(self, *a, **kw))
    live = open_live_index(source, WordTokenizer(), HashEmbedder(64), index_dir=tmp_path / "i", watch=False)
    try:
        ready = live.snapshot()
        assert True not in built and ready.update.pending == ("man8/newd.8",) and "man8/toold.8" in ready.doc_ids
        deadline = time.monotonic() + 30
        while "man8/newd.8" not in live.doc_ids and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "man8/newd.8" in live.doc_ids and built  # chunked behind, BM25 built then
    finally:
        live.close()


def test_conditionals_nested_deep_and_endless_string_definitions_are_read_in_bounds():
    """A hostile page: 20,000 one-line `.if n` inside one another, and a `.ds` continued over 100,000 lines."""
    page = (".TH X 1\n.SH NAME\n" + ".if n " * 20000 + "Too far.\n" + ".ds Z a \\\n" + "b \\\n" * 100000 + "end\n"
            "Text \\*Z.\n.ie t \\{\\\nTroff only.\n.\\}\n.el Nroff side.\n.if n .if n Two deep.\n")
    text = man_layout(page).text
    assert "Too far" not in text and "Two deep." in text  # nesting stops at MAX_NESTING, without a RecursionError
    assert "Nroff side." in text and "Troff only" not in text  # `.el` of a troff block is read
    assert text.count("b") > 90000  # the definition stops at MAX_DEFINITION_LINES; the rest is read as text
