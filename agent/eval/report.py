"""The eval report: one dict (report.json), a terminal table, and report.md with a row per question."""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

from agent import json_output
from agent.errors import UsageError
from agent.eval.metrics import (
    Thresholds,
    answer_metrics,
    citation_metrics,
    cites_gold,
    cost_metrics,
    invariant_failures,
    problems,
    shown_metrics,
    source_metrics,
    threshold_failures,
)
from agent.eval.records import Record

Section = tuple[str, list[tuple[str, str]]]


def question_counts(records: Sequence[Record]) -> dict:
    return {
        "n": len(records),
        "answerable": sum(r.answerable for r in records),
        "unanswerable": sum(not r.answerable for r in records),
    }


def build_report(records: Sequence[Record], retrieval: Sequence, settings: dict, thresholds: Thresholds) -> dict:
    """Every metric, the gate's verdict, and the per-question rows."""
    citations = citation_metrics(records)
    recall5 = next((r.recall_at_5 for r in retrieval if r.name == "hybrid" and r.level == "chunk"), None)
    broken = invariant_failures(records, citations)
    missed = threshold_failures(thresholds, recall5, citations)
    return {
        "settings": settings,
        "questions": question_counts(records),
        "retrieval": [asdict(r) for r in retrieval],
        "citations": citations,
        "answers": answer_metrics(records),
        "shown": shown_metrics(records),
        "cost": cost_metrics(records),
        "sources": source_metrics(records),
        "gate": {"ok": not broken and not missed, "invariants": broken, "thresholds": thresholds.as_dict(), "missed": missed},
        "rows": [dict(r.to_json(), problems=problems(r), cites_gold=cites_gold(r) if r.answerable else None) for r in records],
    }


def build_probe_report(records: Sequence[Record], retrieval: Sequence, settings: dict) -> dict:
    """The report of a run without the model: retrieval, and the conflict notes of what would be shown."""
    return {
        "settings": settings,
        "questions": question_counts(records),
        "retrieval": [asdict(r) for r in retrieval],
        "sources": source_metrics(records),
        "rows": [
            {"id": r.id, "tags": list(r.tags), "shown_chunks": list(r.shown_chunks),
             "shown_outdated": list(r.shown_outdated), "conflicts": list(r.conflicts)}
            for r in records
        ],
    }


def format_probe(report: dict) -> str:
    """The no-model report for a terminal: retrieval, the conflict-note rates, and each question with a note."""
    q = report["questions"]
    lines = [f"{q['n']} questions, searched and packed without the model", ""]
    if report["retrieval"]:
        lines += ["Retrieval", *_aligned([RETRIEVAL_HEADER, *retrieval_lines(report)], indent="  "), ""]
    rows = source_lines(report["sources"])[:2]
    width = max(len(label) for label, _ in rows)
    lines += ["Sources", *[f"  {label:<{width}}  {value}" for label, value in rows], ""]
    noted = [r for r in report["rows"] if r["conflicts"] or "conflict" in r["tags"]]
    if noted:
        lines.append("Conflict notes")
        for r in noted:
            tag = "conflict" if "conflict" in r["tags"] else "untagged"
            notes = " | ".join(c["note"] for c in r["conflicts"]) or "(no note)"
            lines.append(f"  {r['id']} ({tag}): {notes}")
    return "\n".join(lines)


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def sections(report: dict) -> list[Section]:
    """The summary as labelled lines, shared by the terminal table and report.md."""
    c, a, k = report["citations"], report["answers"], report["cost"]
    d = report.get("shown") or shown_metrics(())
    status = a["status"]
    verdicts = " · ".join(f"{v} {n}" for v, n in c["verdicts"].items()) or "none"
    if k["tool_steps"]:
        tools = f"{pct(k['tool_call_success'])} of {k['tool_steps']} model tool steps had a valid call"
    else:
        tools = "no model tool steps"
    if k["agent_searches"]:
        tools += f"; {k['agent_searches']} searches run by the agent itself (always valid, not the model's)"
    return [
        ("Citations", [
            ("cited numbers", str(c["cited"])),
            ("flagged or resolved", f"{pct(c['flagged_or_resolved'])} "
                                    f"({c['resolved']} resolved, {c['flagged']} flagged, {c['unchecked']} unchecked)"),
            ("made-up rate", f"{pct(c['made_up_rate'])} ({c['made_up']}; in {c['answers_with_made_up']} answers)"),
            ("bad citations not flagged", str(c["falsely_passed"])),
            ("precision (gold or holds evidence)", f"{num(c['precision'])} of {c['precision_n']} resolved"),
            ("recall: cites a gold chunk / doc", f"{num(c['recall'])} / {num(c['doc_recall'])} of {c['recall_n']}"),
            ("verdicts", verdicts),
        ]),
        ("Answers", [
            ("answered / insufficient / error", " / ".join(
                str(status.get(s, 0)) for s in ("answered", "insufficient_evidence", "error"))),
            ("with quoted fallback", str(a["quoted"])),
            ("abstention on unanswerable", f"{pct(a['abstention_accuracy'])} of {a['unanswerable']}"),
            ("false abstention on answerable", f"{pct(a['false_abstention'])} of {a['answerable']}"),
            ("evidence word overlap (mean)", f"{num(a['evidence_overlap'])} of {a['evidence_n']} answered"),
            ("evidence string in the answer", pct(a["evidence_contained"])),
            ("gold chunk among the agent's hits / shown excerpts", f"{pct(a['gold_retrieved'])} / {pct(a['gold_shown'])}"),
        ]),
        ("Shown as the answer", [
            ("displayed precision (supported / shown sentences)",
             f"{num(d['displayed_precision'])} of {d['shown_sentences']} (draft sentences {d['draft_sentences']})"),
            ("evidence hit (answerable questions)", f"{pct(d['evidence_hit'])} of {d['evidence_hit_n']}"),
            ("model share (sentences the model decoded)", pct(d["model_share"])),
            ("made-up numbers", str(c["made_up"])),
            ("abstention / false abstention", f"{pct(a['abstention_accuracy'])} / {pct(a['false_abstention'])}"),
            ("latency p50 / first token p50", f"{num(k['latency_p50'], 1)} s / {num(k['ttft_p50'])} s"),
        ]),
        ("Sources", source_lines(report["sources"])),
        ("Cost", [
            ("latency p50 / p95", f"{num(k['latency_p50'], 1)} s / {num(k['latency_p95'], 1)} s"),
            ("first token p50 / p95", f"{num(k['ttft_p50'])} s / {num(k['ttft_p95'])} s"),
            ("tokens/s (median)", num(k["tokens_per_second_p50"], 1)),
            ("prompt tokens mean / max", f"{num(k['prompt_tokens_mean'], 0)} / {k['prompt_tokens_max']} (n_ctx {k['n_ctx']})"),
            ("tool calls", tools),
        ]),
    ]


def source_lines(s: dict) -> list[tuple[str, str]]:
    """Conflict notes and outdated citations as labelled lines (targets: all, none, never)."""
    return [
        ("conflict note where the docs disagree", f"{pct(s['conflict_note_rate'])} "
                                                  f"({s['conflict_noted']} of {s['conflict_questions']}; target all)"),
        ("conflict note on other questions", f"{pct(s['other_note_rate'])} "
                                             f"({s['other_noted']} of {s['other_questions']}; target none)"),
        ("cites only an outdated page, current shown", f"{s['cite_outdated_only']} of {s['cite_outdated']} answers "
                                                       "citing an outdated page (target 0; questions about the "
                                                       "outdated page itself left out)"),
    ]


def retrieval_lines(report: dict) -> list[list[str]]:
    return [
        [r["name"], r["level"], str(r["n"]), num(r["recall_at_1"], 3), num(r["recall_at_5"], 3), num(r["mrr_at_10"], 3)]
        for r in report["retrieval"]
    ]


RETRIEVAL_HEADER = ["retriever", "level", "n", "R@1", "R@5", "MRR@10"]


def headline(report: dict) -> str:
    s, q = report["settings"], report["questions"]
    return (
        f"{q['n']} questions ({q['answerable']} answerable, {q['unanswerable']} unanswerable) · "
        f"policy {s.get('policy')} · {s.get('decoding') or ('constrained' if s.get('constrained') else 'free')} decoding · "
        f"fallback {'on' if s.get('fallback') else 'off'} · k {s.get('k')} · {s.get('chunks')} chunks"
    )


def gate_lines(report: dict) -> list[str]:
    gate = report["gate"]
    if gate["ok"]:
        return ["Invariants hold" + (" and every threshold is met" if gate["thresholds"] else "") + "."]
    return [f"FAILED: {line}" for line in gate["invariants"] + gate["missed"]]


def format_terminal(report: dict) -> str:
    """The summary as aligned text for a terminal."""
    lines = [headline(report), ""]
    if report["retrieval"]:
        lines += ["Retrieval", *_aligned([RETRIEVAL_HEADER, *retrieval_lines(report)], indent="  "), ""]
    for title, rows in sections(report):
        width = max(len(label) for label, _ in rows)
        lines.append(title)
        lines += [f"  {label:<{width}}  {value}" for label, value in rows]
        lines.append("")
    return "\n".join(lines + gate_lines(report))


def _aligned(rows: list[list[str]], indent: str = "") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def format_markdown(report: dict) -> str:
    """report.md: the summary tables, then each question with its answer and citation verdicts."""
    out = ["# smoldocs eval", "", headline(report), "", *[f"- {g}" for g in gate_lines(report)], ""]
    settings = ", ".join(f"{k}={v}" for k, v in report["settings"].items())
    out += [f"Settings: {settings}", ""]
    if report["retrieval"]:
        out += ["## Retrieval", "", *_md_table(RETRIEVAL_HEADER, retrieval_lines(report)), ""]
    for title, rows in sections(report):
        out += [f"## {title}", "", *_md_table(["metric", "value"], [list(r) for r in rows]), ""]
    out += ["## Questions", "", *_md_table(
        ["id", "status", "cites gold", "verdicts", "latency", "problems"],
        [[r["id"], r["status"], _cites_gold(r), _verdicts(r), f"{r['latency']:.1f} s", "; ".join(r["problems"]) or "-"]
         for r in report["rows"]],
    ), ""]
    for r in report["rows"]:
        out += _question_detail(r)
    return "\n".join(out)


def _cites_gold(row: dict) -> str:
    return {None: "(unanswerable)", True: "yes", False: "no"}[row["cites_gold"]]


def _verdicts(row: dict) -> str:
    return " ".join(f"[{c['n']}] {c['verdict']}" for c in row["citations"]) or "-"


def _question_detail(row: dict) -> list[str]:
    gold = f"{row['doc']}: \"{row['evidence']}\"" if row["doc"] else "none (unanswerable)"
    out = [f"### {row['id']}: {_cell(row['question'])}", "", f"Gold: {_cell(gold)}  ", f"Status: {row['status']}"]
    if row["error"]:
        out.append(f"  \nError: {_cell(row['error'])}")
    for step in row["tool_steps"]:
        out.append(f"  \nTool step ({step['valid']} valid of {step['calls']} calls): `{_cell(step['text'])}`")
    if row["queries"]:
        out.append("  \nSearched: " + "; ".join(f"`{_cell(q)}`" for q in row["queries"]))
    out += ["", *[f"> {line}" for line in (row["answer"] or "(empty)").splitlines()], ""]
    for conflict in row.get("conflicts", ()):
        out.append(f"- note: {_cell(conflict.get('note', ''))}")
    for c in row["citations"]:
        mark = ("gold" if c["gold"] else "not gold") + (" · outdated" if c.get("outdated") else "")
        where = c["chunk_id"] or "no such excerpt"
        out.append(f"- [{c['n']}] {c['verdict']} · {where} · {mark}")
    if row["problems"]:
        out.append(f"- problems: {'; '.join(row['problems'])}")
    return out + [""]


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def check_out_dir(out_dir: str | Path) -> Path:
    """The --out folder, made and proven writable before a run: a run of hours must not end in a report it cannot
    write."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file: give a folder for report.json and report.md")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".smoldocs-write-check.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"--out {out} cannot be written ({exc.strerror or exc}): give a folder you can write to") from None
    return out


def write_report(out_dir: str | Path, report: dict) -> tuple[Path, Path]:
    """report.json and report.md in `out_dir`, both written whole or neither."""
    out = Path(out_dir)
    json_path, md_path = out / "report.json", out / "report.md"
    _write_together(out, {json_path: json_output.dumps(report, indent=1) + "\n", md_path: format_markdown(report) + "\n"})
    return json_path, md_path


def write_probe(out_dir: str | Path, report: dict) -> Path:
    """probe.json (a run without the model) in `out_dir`, written whole or not at all."""
    out = Path(out_dir)
    _write_together(out, {out / "probe.json": json_output.dumps(report, indent=1) + "\n"})
    return out / "probe.json"


def _write_together(out: Path, texts: dict[Path, str]) -> None:
    """Every file written to a temp file in its folder first, then renamed into place: a disk that fills, or a
    folder that went away, leaves neither a half-written file nor a new report.json beside an old report.md."""
    temps: list[str] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for path, text in texts.items():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            temps.append(tmp)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        for tmp, path in zip(temps, texts):
            os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"could not write the report to {out} ({exc.strerror or exc}): the report printed above is "
                         "complete; free some space or pass another --out") from None
    finally:
        for tmp in temps:
            Path(tmp).unlink(missing_ok=True)
