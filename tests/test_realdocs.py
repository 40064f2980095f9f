"""The real-docs suite's builder, check and scorer, on small folders made here (no Debian package needed)."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace

import numpy as np
import pytest

from benchmarks.realdocs.checking import check_package
from benchmarks.realdocs.gather import copy_package, source_files
from benchmarks.realdocs.scoring import (
    Answered, PackageScore, answer_question, answer_rates, cold_start, pooled, quoted_sentences, score_package, score_table,
)
from benchmarks.realdocs.suite import Package, choose_packages, load_packages
from rag.answering.extractive import QUOTE_LABEL
from rag.evaluation import Question
from rag.indexing.build import open_index


def _package(tmp_path, name="tiny", questions=(), **changes) -> Package:
    options = dict(name=name, apt=None, format="md", split="fit", source=tmp_path / "docs", include=("**/*.md",),
                   questions=tuple(questions))
    options.update(changes)
    return Package(**options)


def _questions(path, rows) -> list:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return [path]


def test_the_shipped_packages_file_names_each_split_and_never_a_reserved_package():
    packages = load_packages()
    assert {p.split for p in packages} == {"fit", "held"}
    assert not {"git-doc", "nodejs-doc", "sqlite3-doc"} & {name for p in packages for name in p.apt_names}
    assert [p.name for p in choose_packages(packages, split="held")] == [p.name for p in packages if p.split == "held"]
    with pytest.raises(ValueError, match="unknown package nope"):
        choose_packages(packages, ["nope"])
    with pytest.raises(ValueError, match="choose one of fit, held, all"):
        choose_packages(packages, split="train")


def test_the_builder_copies_the_included_files_unpacking_gz_and_renaming_suffixes(tmp_path):
    source = tmp_path / "shipped"
    (source / "sub").mkdir(parents=True)
    (source / "FAQ.txt").write_text("Title\n=====\n\nText.\n")
    (source / "sub" / "guide.txt.gz").write_bytes(gzip.compress(b"Guide\n=====\n\nMore text.\n"))
    (source / "sub" / "skip.txt").write_text("left out")
    (source / "style.css").write_text("body {}")
    package = _package(tmp_path, source=source, include=("*.txt", "**/*.txt.gz", "sub/*.txt"),
                       exclude=("sub/skip.txt",), rename=((".txt", ".rst"),), apt="some-doc")
    assert [name for _, name in source_files(package)] == ["FAQ.rst", "sub/guide.rst"]
    copied = copy_package(package, tmp_path / "suite")
    assert copied.files == 2 and copied.folder == tmp_path / "suite" / "tiny"
    assert (copied.folder / "sub" / "guide.rst").read_text() == "Guide\n=====\n\nMore text.\n"
    assert sorted(p.name for p in copied.folder.rglob("*") if p.is_file()) == ["FAQ.rst", "guide.rst"]


def test_the_check_finds_evidence_in_the_extracted_text_and_names_every_problem(tmp_path, real_tokenizer):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("# Tea\n\nGreen tea should steep for two minutes in water at 80 degrees.\n\n"
                                 "```\nkettle --heat 80 --then steep --for 120 seconds\n```\n")
    (docs / "page.html").write_text("<html><body><h1>Coffee</h1><p>Grind the beans   just before\nbrewing "
                                    "them for the best taste.</p></body></html>")
    rows = [
        {"id": "q1", "q": "How long does green tea steep?", "doc": "tea.md", "evidence": "steep for two minutes in water", "difficulty": "keyword"},
        {"id": "q2", "q": "When should I grind coffee?", "doc": "page.html", "evidence": "Grind the beans just before brewing them", "difficulty": "paraphrase"},
        {"id": "q3", "q": "Boiling water?", "doc": "tea.md", "evidence": "boil the water for ten minutes first", "difficulty": "keyword"},
        {"id": "q3", "q": "Milk?", "doc": "milk.md", "evidence": "add the milk after the tea", "difficulty": "keyword"},
        {"id": "q5", "q": "Sugar?", "doc": "tea.md", "evidence": "two minutes", "difficulty": "keyword"},
        {"id": "q6", "q": "Which kettle command?", "doc": "tea.md", "evidence": "kettle --heat 80 --then steep --for 120",
         "difficulty": "keyword"},
    ]
    package = _package(tmp_path, questions=_questions(tmp_path / "q.jsonl", rows))
    result = check_package(package, docs, real_tokenizer, strict_files=package.questions)
    assert result.questions == 6 and result.unanswerable == 0
    assert (result.in_code, result.with_evidence) == (1, 4)  # q6's evidence opens inside the code fence
    assert list(result.problems) == [
        "tiny: id q3 is used 2 times",
        "tiny q3: evidence not in the text extracted from tea.md: 'boil the water for ten minutes first'",
        "tiny q3: gold doc milk.md is not in " + str(docs),
        "tiny q5: evidence has 2 words, not 5-15",
        "tiny: 0 of 6 questions unanswerable, under 15%",
    ]


def test_quoted_sentences_are_read_back_from_the_quoted_answer():
    text = f"{QUOTE_LABEL}\n\n> Green tea steeps for two minutes. [1]\n\n> Use water at 80 degrees. [2]"
    assert quoted_sentences(text) == ["Green tea steeps for two minutes.", "Use water at 80 degrees."]


def _answer(qid, answerable, declined, hit=False, seconds=1.0, words=0):
    return Answered(qid, answerable, declined, hit, hit, answerable, seconds, evidence_shown=answerable, words=words)


def test_figures_and_pools_count_declines_and_quoted_evidence_per_kind_of_question():
    answers = [_answer("a", True, False, hit=True, seconds=1.0, words=30), _answer("b", True, True, seconds=3.0),
               _answer("c", False, True, seconds=2.0), _answer("d", False, False, seconds=5.0, words=11)]
    f = answer_rates(answers)
    assert f == {"evidence_shown": 1.0, "evidence_sentence": 0.5, "evidence_exact": 0.5, "unanswerable_declined": 0.5,
                 "answerable_declined": 0.5, "answer_words": 20.5, "p50_seconds": 2.5}  # words: answers shown only
    one = PackageScore("one", "held", 4, 2, {"bm25": 1.0, "dense": 0.5, "hybrid": 0.5, "rrf": 0.0}, 2, answers)
    two = PackageScore("two", "held", 1, 1, {"bm25": 0.0, "dense": 1.0, "hybrid": 1.0, "rrf": 1.0}, 2,
                       [_answer("e", True, False, hit=True)])
    both = pooled([one, two], "held")
    assert both.recall_at_5 == {"bm25": 0.5, "dense": 0.75, "hybrid": 0.75, "rrf": 0.5}
    assert both.rates()["evidence_sentence"] == pytest.approx(2 / 3)
    assert pooled([one, two], "fit") is None
    assert "| pooled held | held | 5 (2 unanswerable) | 0.50 | 0.75 | 0.75 | 0.50 | 1.00 | 0.67 |" in score_table([one, two])


def test_a_tiny_package_is_indexed_searched_and_answered_with_the_real_parts(tmp_path, real_tokenizer, real_embedder,
                                                                           monkeypatch):
    from benchmarks.realdocs import scoring
    from benchmarks.realdocs.typos import misspelt

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("# Tea\n\nGreen tea should steep for two minutes in water at 80 degrees. "
                                 "Black tea takes four minutes in boiling water.\n")
    (docs / "coffee.md").write_text("# Coffee\n\nGrind the beans just before brewing them for the best taste. "
                                    "A French press needs a coarse grind.\n")
    (docs / "bread.md").write_text("# Bread\n\nLet the dough rise for an hour in a warm place until it doubles.\n")
    rows = [
        {"id": "t1", "q": "How long should green tea steep?", "doc": "tea.md", "evidence": "Green tea should steep for two minutes", "difficulty": "keyword"},
        {"id": "t2", "q": "How coarse should coffee be for a French press?", "doc": "coffee.md", "evidence": "A French press needs a coarse grind", "difficulty": "keyword"},
        {"id": "t3", "q": "How do I change the oil in a motorbike engine?", "doc": None, "evidence": None, "difficulty": "unanswerable"},
    ]
    package = _package(tmp_path, questions=_questions(tmp_path / "q.jsonl", rows))
    score = score_package(package, docs, real_tokenizer, real_embedder, say=lambda line: None)
    assert score.questions == 3 and score.answerable == 2 and score.graded == 2
    assert set(score.recall_at_5) == {"bm25", "dense", "hybrid", "rrf"}
    assert score.recall_at_5["bm25"] == 1.0  # three documents: the gold one is always in the first five
    assert score.index["files"] == 3 and score.index["skipped"] == {}
    assert [a.id for a in score.answers] == ["t1", "t2", "t3"]
    by_id = {a.id: a for a in score.answers}
    assert by_id["t1"].evidence_shown and by_id["t1"].evidence_sentence and not by_id["t1"].declined  # the one sentence that answers is quoted
    assert by_id["t1"].words >= len("Green tea should steep for two minutes in water at 80 degrees.".split())
    assert all(a.words == 0 for a in score.answers if a.declined)
    assert all(a.seconds > 0 for a in score.answers)
    # score --k and --budget: what the first search may show
    both = Question(id="b1", q="How long should green tea steep, and how coarse a grind does a French press need?",
                    doc="tea.md", evidence="Green tea should steep for two minutes", difficulty="keyword")
    index = open_index(docs, real_tokenizer, real_embedder)
    assert answer_question(index, real_tokenizer, real_embedder, both).excerpts == 2  # tea and coffee
    assert answer_question(index, real_tokenizer, real_embedder, both, k=1).excerpts == 1
    assert answer_question(index, real_tokenizer, real_embedder, both, budget=5).excerpts == 0  # no chunk fits 5 tokens
    # score --typos: each question asked with its typo
    asked: list[str] = []
    monkeypatch.setattr(scoring, "answer_question", lambda index, tokenizer, embedder, q, *rest: asked.append(q.q))
    score_package(package, docs, real_tokenizer, real_embedder, say=lambda line: None, typos=True)
    assert asked == [misspelt(r["q"], r["id"]) for r in rows] and asked != [r["q"] for r in rows]
    cold = cold_start(docs, real_tokenizer, real_embedder)
    assert cold["files"] == 3 and cold["chunks"] == score.index["chunks"]
    assert cold["first_search_seconds"] >= cold["chunked_seconds"] > 0


def test_a_typo_swaps_two_neighbouring_letters_of_one_plain_word_chosen_by_the_id():
    from benchmarks.realdocs.typos import misspelt, with_typo

    text = "How long should green tea steep in `--water` or Kettle.app?"
    typo = misspelt(text, "t1")
    assert typo != text and len(typo) == len(text) and misspelt(text, "t1") == typo  # the same every run
    changed = [(a, b) for a, b in zip(text.split(), typo.split()) if a != b]
    assert len(changed) == 1 and changed[0][0] in ("green", "steep")  # "should" is a stopword; the rest too short or not plain
    (word, wrong), = changed
    assert wrong[0] == word[0] and sorted(wrong) == sorted(word)
    assert sum(x != y for x, y in zip(word, wrong)) == 2  # two neighbours swapped
    assert {misspelt(text, key) for key in map(str, range(40))} - {text} == {
        text.replace(w, w[:i] + w[i + 1] + w[i] + w[i + 2:]) for w in ("green", "steep") for i in range(1, 4)
        if w[i] != w[i + 1]}
    assert misspelt("Is it fast?", "t1") == "Is it fast?"  # no word of five letters: as written
    question = Question(id="t1", q=text, doc="tea.md", evidence="steep", difficulty="keyword")
    assert with_typo(question).q == typo and with_typo(question).evidence == "steep"


def test_prose_inside_an_html_pre_is_quoted_in_the_answer_with_the_real_parts(tmp_path, real_tokenizer, real_embedder):
    # Vim's help pages and HAProxy's manuals are running text inside <pre>: before CHUNKER_VERSION 5 all of it was
    # fenced code, which quotes never use, so no question about them got the sentence that answers it.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "usr_05.html").write_text(
        "<html><body><h1>usr_05</h1><pre>\n*usr_05.txt*\tFor Vim version 9.0.\n\n"
        "You probably got tired of typing commands that you use very often.  To start\n"
        "Vim with all your favorite option settings, you write them in the vimrc file.\n"
        "Vim executes the commands in this file when it starts up.\n\n"
        "\t:edit $MYVIMRC\n\n"
        "The swap file is kept in the same directory as the file you are editing.\n</pre></body></html>\n")
    (docs / "usr_06.html").write_text(
        "<html><body><h1>usr_06</h1><pre>\nSyntax highlighting colours the text by its meaning.\n"
        "Switch it on with the syntax command in your vimrc file, and off again the same way.\n\n"
        "\t:syntax enable\n</pre></body></html>\n")
    rows = [{"id": "v1", "q": "Where do I write my favorite option settings so that Vim starts with them?",
             "doc": "usr_05.html", "evidence": "you write them in the vimrc file", "difficulty": "paraphrase"}]
    package = _package(tmp_path, questions=_questions(tmp_path / "q.jsonl", rows))
    score = score_package(package, docs, real_tokenizer, real_embedder, say=lambda line: None)
    (answer,) = score.answers
    assert answer.evidence_shown and answer.evidence_sentence and not answer.declined


def test_refit_fits_on_the_fit_packages_only_and_reports_every_package_before_and_after(tmp_path, real_tokenizer, real_embedder):
    from benchmarks.realdocs.refit import CURRENT, answered, figures, package_cases, refit, refit_declines, table
    from rag.answering.answerability import SIGNALS
    from rag.answering.quote_features import FEATURES

    packages = []
    for name, split, text, rows in (
        ("kettle", "fit", "# Kettle\n\nThe kettle switches itself off when the water boils. Descale it every month "
         "with white vinegar.\n\n# Lid\n\nThe lid opens with the button on the handle.\n",
         [{"id": "k1", "q": "Do I have to turn the kettle off myself?", "doc": "kettle.md",
           "evidence": "switches itself off when the water boils"},
          {"id": "k2", "q": "How do I get limescale out of it?", "doc": "kettle.md", "evidence": "Descale it every month with white vinegar"},
          {"id": "k3", "q": "How do I reset the router's password?", "doc": None, "evidence": None}]),
        ("toaster", "held", "# Toaster\n\nTurn the dial to six for dark toast. The crumb tray slides out at the back.\n",
         [{"id": "t1", "q": "Where do the crumbs go?", "doc": "toaster.md", "evidence": "The crumb tray slides out at the back"},
          {"id": "t2", "q": "Which bus goes to the airport?", "doc": None, "evidence": None}]),
    ):
        docs = tmp_path / name
        docs.mkdir()
        (docs / f"{name}.md").write_text(text)
        packages.append(_package(tmp_path, name=name, split=split, source=docs,
                                 questions=_questions(tmp_path / f"{name}.jsonl", rows)))
    cache = tmp_path / "cases"
    cases = {p.name: package_cases(p, real_tokenizer, real_embedder, cache) for p in packages}
    assert [len(cases["kettle"]), len(cases["toaster"])] == [3, 2]
    again = package_cases(packages[0], real_tokenizer, real_embedder, cache)  # read back, not searched again
    assert (cache / "kettle.cases.pickle").is_file() and [c.question.id for c in again] == ["k1", "k2", "k3"]

    after = refit({"kettle": cases["kettle"]})
    assert set(after.weights) == set(FEATURES) and sum(after.weights.values()) == pytest.approx(1.0, abs=0.02)
    assert len(after.ab_weights) == len(SIGNALS) and all(w >= 0 for w in after.weights.values())
    # the declines alone: the quote weights kept, the fit package's answerable questions declined as often as now
    declines = refit_declines({"kettle": cases["kettle"]})
    assert declines.weights == CURRENT.weights and len(declines.ab_weights) == len(SIGNALS)
    assert [answered(c, declines)[0] for c in cases["kettle"] if c.question.answerable] == [
        answered(c, CURRENT)[0] for c in cases["kettle"] if c.question.answerable]
    held = figures(cases["toaster"], CURRENT)
    assert held["answerable"] == 1 and held["unanswerable"] == 1 and 0.0 <= held["evidence_sentence"] <= 1.0
    lines = table(packages, cases, CURRENT, after).splitlines()
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| kettle", "| toaster", "| pooled fit", "| pooled held"]


def test_train_reranker_runs_end_to_end_on_a_tiny_fit_package(tmp_path, real_tokenizer, real_embedder):
    pytest.importorskip("torch", reason="the training extra: pip install -e '.[train]'")
    from benchmarks.realdocs.rerank_data import package_pairs, suite_pairs
    from benchmarks.realdocs.train_reranker import TrainSettings, main as train_main
    from models.reranker import load_reranker, read_reranker

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kettle.md").write_text("# Kettle\n\nThe kettle switches itself off when the water boils. Descale it "
                                    "every month with white vinegar.\n\n# Lid\n\nThe lid opens with the button on the handle.\n")
    (docs / "toaster.md").write_text("# Toaster\n\nTurn the dial to six for dark toast. The crumb tray slides out at the back.\n")
    rows = [{"id": f"k{i}", "q": q, "doc": d, "evidence": e} for i, (q, d, e) in enumerate([
        ("Do I have to turn the kettle off myself?", "kettle.md", "switches itself off when the water boils"),
        ("How do I get limescale out of it?", "kettle.md", "Descale it every month with white vinegar"),
        ("How do I open the lid?", "kettle.md", "The lid opens with the button on the handle"),
        ("Where do the crumbs go?", "toaster.md", "The crumb tray slides out at the back"),
        ("How do I get darker toast?", "toaster.md", "Turn the dial to six for dark toast"),
        ("Can the kettle or the toaster be started from my phone app?", None, None),
    ])]
    package = _package(tmp_path, questions=_questions(tmp_path / "q.jsonl", rows), source=docs)
    cache = tmp_path / "pairs"
    pairs = package_pairs(package, docs, real_tokenizer, cache, say=lambda line: None)
    assert {p.qid for p in pairs} == {f"k{i}" for i in range(6)}
    assert all(p.label == 0 for p in pairs if p.qid == "k5") and all(p.unanswerable == (p.qid == "k5") for p in pairs)
    assert any(p.label and "switches itself off" in p.text for p in pairs)
    assert all(p.text.startswith(("Kettle: ", "Lid: ", "Toaster: ")) for p in pairs)  # read under the heading path
    hybrid = package_pairs(package, docs, real_tokenizer, cache, say=lambda line: None, pools="hybrid",
                           embedder=real_embedder)
    assert {p.qid for p in hybrid} == {f"k{i}" for i in range(6)}
    assert any(p.label and "switches itself off" in p.text for p in hybrid)
    assert len(list(cache.glob("tiny-*.jsonl"))) == 2  # the hybrid pools are cached apart from BM25's
    with pytest.raises(ValueError, match="hybrid pools need an embedder"):
        package_pairs(package, docs, real_tokenizer, cache, pools="hybrid")
    with pytest.raises(ValueError, match="fit packages only"):
        suite_pairs([_package(tmp_path, name="held-one", split="held")], real_tokenizer, cache)

    out = tmp_path / "reranker.safetensors"
    said = []
    assert train_main([package], real_tokenizer, cache, out, TrainSettings(epochs=1), say=said.append) == 0
    weights, meta = read_reranker(out)
    assert meta["trained_on"] == "tiny" and int(meta["questions"]) >= 1 and "answer_logit" in meta
    assert any(line.startswith("trained on ") for line in said)
    scorer = load_reranker(real_embedder.tokenize, out)
    assert np.isfinite(scorer.score("kettle", ["The kettle boils.", "Toast."])).all()


def test_train_query_tower_runs_end_to_end_on_a_tiny_fit_package(tmp_path, real_tokenizer, real_embedder):
    pytest.importorskip("torch", reason="the training extra: pip install -e '.[train]'")
    import shutil

    from benchmarks.realdocs.train_query_tower import main as tower_main, package_data
    from models.query_tower import PREFIX, load_query_tower
    from models.reranker import RERANKER_FILE, load_reranker, read_reranker

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kettle.md").write_text("# Kettle\n\nThe kettle switches itself off when the water boils.\n\n# Lid\n\n"
                                    "The lid opens with the button on the handle.\n")
    (docs / "toaster.md").write_text("# Toaster\n\nTurn the dial to six for dark toast.\n")
    rows = [{"id": f"k{i}", "q": q, "doc": d, "evidence": e} for i, (q, d, e) in enumerate([
        ("Do I have to turn the kettle off myself?", "kettle.md", "switches itself off when the water boils"),
        ("How do I open the lid?", "kettle.md", "The lid opens with the button on the handle"),
        ("How do I get darker toast?", "toaster.md", "Turn the dial to six for dark toast"),
        ("Can the toaster be started from my phone app?", None, None),
    ])]
    package = _package(tmp_path, questions=_questions(tmp_path / "q.jsonl", rows), source=docs)
    data = package_data(package, docs, real_tokenizer, real_embedder)
    assert len(data.questions) == 3 and data.matrix.shape[1] == 384  # the unanswerable one is no training row
    assert all(len(p) == 1 for p in data.positives)
    with pytest.raises(ValueError, match="fit packages only"):
        tower_main([_package(tmp_path, name="held-one", split="held")], real_tokenizer, tmp_path / "x.safetensors")

    out = tmp_path / "weights.safetensors"
    shutil.copy(RERANKER_FILE, out)
    said = []
    assert tower_main([package], real_tokenizer, out, epochs=1, say=said.append) == 0
    weights, meta = read_reranker(out)
    assert meta[PREFIX + "trained_on"] == "tiny" and meta[PREFIX + "questions"] == str(sum(not k for k in data.kept_out))
    assert meta["trained_on"] == read_reranker()[1]["trained_on"]  # the reranker's own metadata kept
    assert any(line.startswith("trained on ") for line in said) and any("kept-out" in line for line in said)
    tower = load_query_tower(real_embedder.tokenize, out)
    assert np.allclose(np.linalg.norm(tower.encode(["kettle"]), axis=1), 1.0, atol=1e-5)
    assert np.isfinite(load_reranker(real_embedder.tokenize, out).score("kettle", ["The kettle boils."])).all()


def test_train_quote_tower_runs_end_to_end_on_a_tiny_fit_package(tmp_path, real_tokenizer, real_embedder):
    pytest.importorskip("torch", reason="the training extra: pip install -e '.[train]'")
    import shutil

    from benchmarks.realdocs.train_quote_tower import chosen_hit, main as quote_main, package_cases
    from models.query_tower import PREFIX, QUOTE_PREFIX, load_query_tower
    from models.reranker import RERANKER_FILE, read_reranker

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kettle.md").write_text(
        "# Kettle\n\nThe kettle is made of steel. It holds a litre and a half of water. The kettle switches itself "
        "off when the water boils. The cord is one metre long.\n\n# Lid\n\nThe lid is hinged at the back. The lid "
        "opens with the button on the handle.\n")
    (docs / "toaster.md").write_text("# Toaster\n\nThe toaster has two slots. Turn the dial to six for dark toast.\n")
    rows = [{"id": f"k{i}", "q": q, "doc": d, "evidence": e} for i, (q, d, e) in enumerate([
        ("Do I have to turn the kettle off myself?", "kettle.md", "switches itself off when the water boils"),
        ("How do I open the lid?", "kettle.md", "The lid opens with the button on the handle"),
        ("How do I get darker toast?", "toaster.md", "Turn the dial to six for dark toast"),
        ("How much water fits in the kettle?", "kettle.md", "It holds a litre and a half of water"),
        ("Can the toaster be started from my phone app?", None, None),
    ])]
    package = _package(tmp_path, questions=_questions(tmp_path / "q.jsonl", rows), source=docs)
    cache = tmp_path / "cases"
    cases = package_cases(package, docs, real_tokenizer, real_embedder, cache)
    assert len(cases) == 4 and all(c.vectors.shape == (len(c.ranked.candidates), 384) for c in cases)  # answerable only
    assert all(c.hits.any() for c in cases) and all(c.hits.sum() < len(c.hits) for c in cases)
    assert list(cache.iterdir()) and len(package_cases(package, docs, real_tokenizer, None, cache)) == 4  # read back
    assert chosen_hit(cases[0], None) in (True, False) and not chosen_hit(
        replace(cases[0], hits=np.zeros_like(cases[0].hits)), None)
    with pytest.raises(ValueError, match="fit packages only"):
        quote_main([_package(tmp_path, name="held-one", split="held")], real_tokenizer, tmp_path / "x.safetensors")

    out = tmp_path / "weights.safetensors"
    shutil.copy(RERANKER_FILE, out)
    said = []
    assert quote_main([package], real_tokenizer, out, epochs=1, cache=cache, say=said.append) == 0
    weights, meta = read_reranker(out)
    assert meta[QUOTE_PREFIX + "trained_on"] == "tiny" and meta[QUOTE_PREFIX + "started_from"] == "query_tower"
    assert meta[PREFIX + "trained_on"] == read_reranker()[1][PREFIX + "trained_on"]  # the search encoder's kept
    assert meta["trained_on"] == read_reranker()[1]["trained_on"]  # and the reranker's
    assert any(line.startswith("trained on ") for line in said) and any("kept-out" in line for line in said)
    tower = load_query_tower(real_embedder.tokenize, out, prefix=QUOTE_PREFIX)
    assert np.allclose(np.linalg.norm(tower.encode(["kettle"]), axis=1), 1.0, atol=1e-5)
