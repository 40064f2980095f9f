"""An Answer as the JSON that `smoldocs ask --json` prints and the eval report stores."""

from __future__ import annotations

from agent.events import Answer


def answer_to_json(answer: Answer) -> dict:
    return {
        "question": answer.question,
        "answer": answer.text,
        "status": answer.status,
        "quoted": answer.quoted,
        "model_text": answer.model_text,
        "citations": [
            {
                "n": c.n,
                "chunk_id": c.chunk_id,
                "doc_id": c.doc_id,
                "uri": c.uri,
                "verdict": c.verdict,
                "support": c.support,
                "evidence": c.evidence,
            }
            for c in answer.citations
        ],
        "claims": [
            {"text": c.text, "citations": list(c.citations), "verdict": c.verdict, "support": c.support}
            for c in answer.claims
        ],
        "unknown": list(answer.unknown),
        "unresolved": list(answer.unresolved),
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "n_ctx": answer.n_ctx,
        "trace": answer.trace,
        "timings": {
            "time_to_first_token": round(answer.time_to_first_token, 4),
            "total": round(answer.total_time, 4),
            "tokens_per_second": round(answer.tokens_per_second, 2),
        },
    }
