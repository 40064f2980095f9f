"""Refit the quote scorer and the answerability rule on the suite's fit packages; report every package, before
and after, and write the new constants to rag/tuned.py with a diff: `python -m benchmarks.realdocs refit [--dry-run]`.
`--declines`: the answerability rule alone (refit_declines), the quote scorer's weights kept.

Each question is searched as the agent's first step does (benchmarks.fitting.quote_eval.collect: hybrid index, k=5,
the evidence budget), and every quotable sentence of the shown excerpts is scored. Fitting sees the fit packages
only, each package weighted equally (docs_corpus has three times the questions of the others); the held-back
packages are only reported.

Figures per package: evidence sentence in the top 1 / top 3 scored sentences (answerable questions whose shown
excerpts hold one), evidence sentence in the quoted answer (the share of all answerable questions, a declined one a
miss, as `score` counts it), unanswerable declined, answerable wrongly declined.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from benchmarks.fitting import tuning
from benchmarks.fitting.quote_eval import (
    Case, answerability_signals, collect, fit_answerability, fit_weights, rescored, top_k,
)
from benchmarks.realdocs.suite import Package
from rag.answering import answerability as ab
from rag.answering.extractive import OTHER_EXCERPT, WEIGHTS, scores_of, select
from rag.evaluation import MemoEmbedder, evidence_sentence, load_questions


@dataclass(frozen=True)
class Constants:
    """What is refitted: the quote scorer's weights and the answerability rule (with its lexical twin, and its
    twin that reads the index's standout)."""

    weights: dict
    ab_weights: tuple
    ab_bias: float
    lexical_weights: tuple = tuple(ab.LEXICAL_WEIGHTS)
    lexical_bias: float = ab.LEXICAL_BIAS
    standout_weights: tuple = tuple(ab.STANDOUT_WEIGHTS)
    standout_bias: float = ab.STANDOUT_BIAS


CURRENT = Constants(dict(WEIGHTS), tuple(ab.WEIGHTS), ab.BIAS)


def package_cases(package: Package, tokenizer, embedder, cache: Path | None = None) -> list[Case]:
    """The package's questions as the quote scorer sees them (read from `cache` when it holds them)."""
    from rag.indexing.build import open_index

    path = cache / f"{package.name}.cases.pickle" if cache is not None else None
    if path is not None and path.is_file():
        return pickle.loads(path.read_bytes())
    questions = [q for p in package.questions for q in load_questions(p)]
    memo = MemoEmbedder(embedder)
    index = open_index(package.folder(), tokenizer, memo)
    cases = collect(index, tokenizer, memo, questions)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(cases))
    return cases


def answered(case: Case, constants: Constants) -> tuple[bool, bool]:
    """(declined, evidence sentence in the quoted answer) for one case under `constants`."""
    if not len(case.ranked.candidates):
        return True, False
    rows = answerability_signals(case, constants.weights)
    declined = unanswerable_probability(rows, constants) >= 0.5
    if declined:
        return True, False
    quotes = select(rescored(case, constants.weights), True, other_excerpt=OTHER_EXCERPT, weights=constants.weights)
    shown = [" ".join(q.passage or (q.sentence,)) for q in quotes]
    return False, any(evidence_sentence(s, case.question.evidence) for s in shown)


def unanswerable_probability(rows: dict[str, float], constants: Constants) -> float:
    """P(unanswerable) under `constants`, by the rule the agent would use (the standout rule where the case has one)."""
    if "standout" in rows:
        return ab.decide(rows, constants.standout_weights, constants.standout_bias, ab.STANDOUT_SIGNALS)
    return ab.decide(rows, constants.ab_weights, constants.ab_bias)


def figures(cases: Sequence[Case], constants: Constants) -> dict[str, float]:
    """The module docstring's figures over `cases`."""
    answerable = [c for c in cases if c.question.answerable]
    unanswerable = [c for c in cases if not c.question.answerable]
    findable = [c for c in answerable if c.hits.any()]
    top1, top3 = top_k(findable, lambda c: scores_of(c.ranked.features, True, constants.weights))
    results = {id(c): answered(c, constants) for c in cases}
    share = lambda hits, n: hits / n if n else float("nan")  # noqa: E731
    return {
        "answerable": len(answerable), "unanswerable": len(unanswerable), "findable": len(findable),
        "top1": share(top1, len(findable)), "top3": share(top3, len(findable)),
        "evidence_sentence": share(sum(results[id(c)][1] for c in answerable), len(answerable)),
        "unanswerable_declined": share(sum(results[id(c)][0] for c in unanswerable), len(unanswerable)),
        "answerable_declined": share(sum(results[id(c)][0] for c in answerable), len(answerable)),
    }


def balanced(by_package: dict[str, list[Case]]) -> list[Case]:
    """The fit cases with each package repeated to about the same number of questions as the largest."""
    most = max(len(cases) for cases in by_package.values())
    out: list[Case] = []
    for cases in by_package.values():
        out += cases * max(1, round(most / len(cases)))
    return out


def refit_declines(fit: dict[str, list[Case]], current: Constants = CURRENT) -> Constants:
    """The answerability rule alone, over every signal, with the quote scorer's weights kept: each package's
    answerable and unanswerable questions weigh the same, then the bias moves so that the fit packages' answerable
    questions are declined as often as under `current`, and the gain is in unanswerable ones declined."""
    named = [(name, c) for name, cases in fit.items() for c in cases if len(c.ranked.candidates)]
    groups = [name for name, _ in named]
    rows = [(answerability_signals(c, current.weights), c.question.answerable) for _, c in named]
    declined_now = sum(ab.decide(r, current.ab_weights, current.ab_bias) >= 0.5 for r, answerable in rows if answerable)
    weights, bias = _pinned(rows, groups, declined_now)
    # without an embedder: the same questions and the same count of answerable ones declined
    lexical = [(answerability_signals(c, current.weights, lexical=True), c.question.answerable) for _, c in named]
    # with the index's standout (every case collected from an embedded index has one): the same count again
    standout = _pinned(rows, groups, declined_now, ab.STANDOUT_SIGNALS) if _all_standout(rows) else \
        (current.standout_weights, current.standout_bias)
    return Constants(dict(current.weights), weights, bias, *_pinned(lexical, groups, declined_now), *standout)


def _all_standout(rows: Sequence[tuple[dict, bool]]) -> bool:
    return bool(rows) and all("standout" in r for r, _ in rows)


def _pinned(rows: Sequence[tuple[dict, bool]], groups: Sequence[str], declined: int,
            names: Sequence[str] = ab.SIGNALS) -> tuple[tuple, float]:
    """The rule's weights over `names` fitted on `rows`, and the bias that declines `declined` of their answerable
    questions."""
    weights, _ = fit_answerability(rows, l2=1e-3, steps=4000, groups=groups, names=names)
    z = sorted((sum(w * r[name] for w, name in zip(weights, names)) for r, answerable in rows if answerable), reverse=True)
    # declined where bias + z >= 0: the `declined` highest answerable z stay declined, the next one is not
    above = z[declined - 1] if declined else z[0] + 0.02
    below = z[declined] if declined < len(z) else z[-1] - 0.02
    return weights, round(-(above + below) / 2, 2)


def refit(fit: dict[str, list[Case]]) -> Constants:
    """Quote weights (listwise softmax), then the answerability rule over them, on the fit packages (the lexical
    rule kept)."""
    cases = balanced(fit)
    weights = fit_weights(cases)
    rows = [(answerability_signals(c, weights), c.question.answerable) for c in cases]
    ab_weights, ab_bias = fit_answerability(rows)
    standout = fit_answerability(rows, names=ab.STANDOUT_SIGNALS) if _all_standout(rows) else \
        (tuple(ab.STANDOUT_WEIGHTS), ab.STANDOUT_BIAS)
    return Constants(weights, ab_weights, ab_bias, tuple(ab.LEXICAL_WEIGHTS), ab.LEXICAL_BIAS, *standout)


COLUMNS = ("top1", "top3", "evidence_sentence", "unanswerable_declined", "answerable_declined")


def table(packages: Sequence[Package], cases: dict[str, list[Case]], before: Constants, after: Constants) -> str:
    head = "| package | split | answerable (findable) | " + " | ".join(f"{c} before | after" for c in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (3 + 2 * len(COLUMNS))]
    rows = [(p.name, p.split, cases[p.name]) for p in packages]
    for split in ("fit", "held"):
        pooled = [c for p in packages if p.split == split for c in cases[p.name]]
        if pooled:
            rows.append((f"pooled {split}", split, pooled))
    for name, split, part in rows:
        b, a = figures(part, before), figures(part, after)
        cells = " | ".join(f"{b[c]:.2f} | {a[c]:.2f}" for c in COLUMNS)
        lines.append(f"| {name} | {split} | {b['answerable']} ({b['findable']}) | {cells} |")
    return "\n".join(lines)


COMMAND = "python -m benchmarks.realdocs refit"


def write_constants(constants: Constants, packages: Sequence[str], path: Path = tuning.TUNED_FILE, write: bool = True,
                    command: str = COMMAND) -> str:
    """The refitted constants and their record (QUOTE_FIT) into the tuned file; the diff, "" when unchanged."""
    values = {"QUOTE_WEIGHTS": dict(constants.weights), "ANSWERABILITY_WEIGHTS": dict(zip(ab.SIGNALS, constants.ab_weights)),
              "ANSWERABILITY_BIAS": constants.ab_bias,
              "ANSWERABILITY_LEXICAL_WEIGHTS": dict(zip(ab.SIGNALS, constants.lexical_weights)),
              "ANSWERABILITY_LEXICAL_BIAS": constants.lexical_bias,
              "ANSWERABILITY_STANDOUT_WEIGHTS": dict(zip(ab.STANDOUT_SIGNALS, constants.standout_weights)),
              "ANSWERABILITY_STANDOUT_BIAS": constants.standout_bias}
    return tuning.rewrite(tuning.record("QUOTE_FIT", command, packages, values), path, write)


def main(packages: Sequence[Package], tokenizer, embedder, cache: Path | None = None, write: bool = True,
         declines: bool = False) -> int:
    from models.query_tower import attach_tuned_queries

    attach_tuned_queries(embedder)  # the first search as the agent runs it: the tuned question encoder
    cases = {}
    for p in packages:
        cases[p.name] = package_cases(p, tokenizer, embedder, cache)
        print(f"{p.name}: {len(cases[p.name])} questions", flush=True)
    fit = {p.name: cases[p.name] for p in packages if p.split == "fit"}
    after = refit_declines(fit) if declines else refit(fit)
    print(f"before: quote weights {CURRENT.weights}; answerability {dict(zip(ab.SIGNALS, CURRENT.ab_weights))} "
          f"bias {CURRENT.ab_bias}")
    print(f"after (fit on {', '.join(fit)}): quote weights {after.weights}; answerability "
          f"{dict(zip(ab.SIGNALS, after.ab_weights))} bias {after.ab_bias}; with the standout "
          f"{dict(zip(ab.STANDOUT_SIGNALS, after.standout_weights))} bias {after.standout_bias}")
    print(table(packages, cases, CURRENT, after))
    command = f"{COMMAND} --declines" if declines else COMMAND
    print(write_constants(after, list(fit), write=write, command=command) or "rag/tuned.py: unchanged")
    return 0

