"""Misspelt question words read as the indexed word one typo away (rag.retrieval.spelling), exact on tiny indexes,
and the typo that used to decline a question the docs answer, on the real index."""

from __future__ import annotations

from collections import Counter

import pytest

from rag.retrieval.spelling import MAX_UNKNOWN, MIN_CHUNKS, MIN_LETTERS, corrections, edits, is_word, respelled
from rag.retrieval.terms import index_terms
from rag.retrieval.vocabulary import TermCounts

DOCS = [
    "The cache holds keys and values.", "A cache is freed at the end.", "Every cache entry is scored.",
    "Chunks are scored by BM25.", "Scores are summed per chunk.", "Documents are split into chunks.",
    "Documents keep their headings.", "Documents are read once.", "A catch block is rare.", "Fails are logged.",
    "Fails are retried.", "Fails are counted.",
]
VOCAB = TermCounts.of(Counter(t for doc in DOCS for t in set(index_terms(doc))), documents=len(DOCS))


def test_edits_are_every_string_one_letter_away():
    out = edits("abc")
    assert {"bc", "ac", "ab", "bac", "acb", "xbc", "abx", "abcd", "zabc"} <= out and "abc" not in out
    assert "cba" not in out and "abcde" not in out  # two edits away
    # deletes 3, swaps 2, changes 3 x 25 (not the letter itself), inserts 4 x 26 less 3 made twice ("aabc", "abbc",
    # "abcc": a letter inserted before or after itself)
    assert len(out) == 3 + 2 + 3 * 25 + 4 * 26 - 3


def test_a_misspelt_word_reads_as_the_most_held_word_one_typo_away():
    assert MIN_LETTERS == 5 and MIN_CHUNKS == 3
    assert corrections("how is the cahce freed?", VOCAB) == {"cahce": "cache"}
    assert corrections("are documnets split, and socred?", VOCAB) == {"documnets": "documents", "socred": "scored"}
    assert respelled("how is the cahce freed? the cahce!", VOCAB) == "how is the cache freed? the cache!"
    # what is read is an edit whose BM25 terms the index holds, so it may be a stem: "cach" is cache's
    assert corrections("is the cacth freed?", VOCAB) == {"cacth": "cach"}
    # "catch" is one edit from "cathe" too, but one chunk holds it and three hold "cache"
    assert corrections("is the cathe freed?", VOCAB) == {"cathe": "cache"}


def test_names_short_words_known_words_and_rare_neighbours_are_left_as_written():
    # FAISS is one letter from "fails" (three chunks): a name the docs never mention stays unknown
    assert corrections("Does it support FAISS or Faiss?", VOCAB) == {}
    assert corrections("how do I pass --cahce or cahce.py or Cahce?", VOCAB) == {}
    assert corrections("is the kye freed?", VOCAB) == {}  # under MIN_LETTERS
    assert corrections("is the cache freed?", VOCAB) == {}  # every word known
    assert corrections("is a catch blokc rare?", VOCAB) == {}  # "block": only one chunk holds it
    assert corrections("how do I use kubernetes?", VOCAB) == {}  # nothing one edit away
    assert corrections("how is the cahce freed?", None) == {} and respelled("the cahce", None) == "the cahce"


def test_only_the_first_unknown_words_are_read_the_rest_of_pasted_text_stays_as_written():
    pasted = " ".join(f"zqx{chr(97 + i)}{chr(97 + j)}" for i in range(5) for j in range(5))  # 25 unknown words
    assert MAX_UNKNOWN == 8
    assert corrections(f"{pasted} cahce", VOCAB) == {}  # "cahce" is the 26th: not read
    assert corrections(f"cahce {pasted}", VOCAB) == {"cahce": "cache"}  # the first: read


def test_english_words_british_spellings_and_compounds_are_not_typos():
    assert all(is_word(w) for w in ("folders", "scored", "normalised", "colour", "analyse", "serverless", "frontend"))
    assert not any(is_word(w) for w in ("cahce", "documnets", "socred", "fodler", "systemd"))
    system = [f"The system mail step {i}." for i in range(3)]
    vocab = TermCounts.of(Counter(t for doc in system for t in set(index_terms(doc))), documents=len(system))
    # "serverless" is two words joined, "colour" British: neither is read as anything
    assert corrections("is the systme serverless or colour?", vocab) == {"systme": "system"}


def test_an_edit_keeps_the_first_and_the_last_letter():
    # "qmail" and "systemd" are names one letter from "mail" and "system"; a typo rarely hits either end
    docs = [f"The system sends mail, step {i}." for i in range(3)]
    vocab = TermCounts.of(Counter(t for doc in docs for t in set(index_terms(doc))), documents=len(docs))
    assert corrections("does qmail or systemd send it?", vocab) == {}
    assert corrections("does the sysetm send it?", vocab) == {"sysetm": "system"}
    assert corrections("does the systme send it?", vocab) == {"systme": "system"}  # the last two swapped
    # "stat" is held, so "statr" could be a name made from it ("systemd"), but its last two swapped are held too
    docs = [f"Start the job, then stat its file, step {i}." for i in range(3)]
    vocab = TermCounts.of(Counter(t for doc in docs for t in set(index_terms(doc))), documents=len(docs))
    assert corrections("how do I statr the job?", vocab) == {"statr": "start"}
    assert corrections("how do I statd the job?", vocab) == {}


def test_the_search_tool_searches_what_the_query_reads_as():
    from fakes import WordTokenizer
    from rag.excerpts.packing import Ledger
    from rag.excerpts.search_tool import search_docs_tool
    from rag.types import Chunk
    from test_search_tool import MemoryRetriever

    class Counted(MemoryRetriever):
        @property
        def vocabulary(self):
            return VOCAB

    chunks = [Chunk(f"docs/{i}.md#0", f"docs/{i}.md", f"docs/{i}.md", text) for i, text in enumerate(DOCS)]
    retriever = Counted(chunks)
    result = search_docs_tool(retriever, Ledger(), WordTokenizer())({"query": "how is the cahce freed?"})
    assert retriever.calls[-1][0] == "how is the cache freed?" and result.hits
    assert result.searched == "how is the cache freed?"  # what the agent shows it searched
    assert search_docs_tool(retriever, Ledger(), WordTokenizer())({"query": "how is the cache freed?"}).searched == ""
    plain = MemoryRetriever(chunks)  # no vocabulary: the query as written
    result = search_docs_tool(plain, Ledger(), WordTokenizer())({"query": "how is the cahce freed?"})
    assert plain.calls[-1][0] == "how is the cahce freed?" and result.searched == ""


@pytest.mark.real
def test_a_typo_no_longer_declines_a_question_the_docs_answer(real_index, real_tokenizer, real_embedder):
    from rag.answering.extractive import QuoteFallback
    from rag.excerpts.packing import Ledger
    from rag.excerpts.search_tool import search_first

    def answer(question: str):
        result = search_first(real_index, Ledger(), real_tokenizer, question)
        shown = {c.n: c for c in result.citations}
        quoter = QuoteFallback(real_embedder, real_index.vocabulary, standout=real_index.standout)
        return [c.chunk_id for c in result.citations], quoter(question, shown, real_index.chunk)

    for right, typo in [("how do I use the KV cache?", "how do I use the KV cahce?"),
                        ("how do I chunk documents for retrieval?", "how do I chunk documnets for retrieval?")]:
        (hits, quoted), (typo_hits, typo_quoted) = answer(right), answer(typo)
        assert quoted is not None and typo_quoted is not None, typo  # was declined: "The docs do not cover this."
        assert typo_hits == hits and typo_quoted.text == quoted.text


@pytest.mark.real
def test_the_agent_answers_a_misspelt_question_and_says_what_it_searched(real_model, real_index, real_embedder):
    from agent.events import AnswerFinished, SearchFinished
    from agent.session import ChatSession
    from agent.settings import AgentSettings

    session = ChatSession(real_model, real_index, embedder=real_embedder,
                          settings=AgentSettings(policy="search-first", decoding="extractive"))
    events = list(session.ask("what is BM25 and how is it socred?"))
    search = next(e for e in events if isinstance(e, SearchFinished))
    answer = next(e.answer for e in events if isinstance(e, AnswerFinished))
    assert search.query == "what is BM25 and how is it socred?" and search.searched == "what is BM25 and how is it scored?"
    assert answer.status == "answered" and any(c.doc_id == "docs/bm25.md" for c in answer.citations)
    session.new_chat()
    events = list(session.ask("what is BM25 and how is it scored?"))
    assert next(e for e in events if isinstance(e, SearchFinished)).searched == ""  # read as written


def test_a_search_read_otherwise_says_so_in_its_title():
    from agent.events import SearchFinished
    from agent.surfaces.tui.tool_trace import call_title

    read = SearchFinished("how is the cahce freed?", (), (), 0, searched="how is the cache freed?")
    assert call_title(read) == "search_docs “how is the cahce freed?” as “how is the cache freed?” → 0 hits, 0 packed, 0 dropped"
    assert call_title(SearchFinished("how is the cache freed?", (), (), 0)) == (
        "search_docs “how is the cache freed?” → 0 hits, 0 packed, 0 dropped")


def test_a_question_read_twice_in_a_row_is_looked_up_once():
    class Counting:
        settings, documents = VOCAB.settings, VOCAB.documents

        def __init__(self) -> None:
            self.asked = 0

        def frequency(self, term, prefix=True):
            return VOCAB.frequency(term, prefix)

        def frequencies(self, terms):
            self.asked += 1
            return VOCAB.frequencies(terms)

    first, second = Counting(), Counting()
    assert respelled("how is the cahce freed?", first) == "how is the cache freed?" and first.asked > 0
    asked = first.asked
    assert respelled("how is the cahce freed?", first) == "how is the cache freed?" and first.asked == asked
    assert respelled("how is the cahce freed?", second) == "how is the cache freed?" and second.asked > 0  # another index
    assert respelled("is the cahce kept?", first) == "is the cache kept?" and first.asked > asked  # another question
