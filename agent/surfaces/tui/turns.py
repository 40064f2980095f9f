"""One turn off the UI thread: each event of the session is handed on, and a turn always ends in an answer."""

from __future__ import annotations

from typing import Callable

from agent.errors import AgentError
from agent.events import Answer, AnswerFinished, AnswerStatus, ErrorEvent, Event, TextDelta
from agent.session import Session
from models.errors import ModelError
from models.protocols import CancelToken
from rag.errors import RagError

USER_ERRORS = (AgentError, ModelError, RagError)


def error_line(exc: BaseException) -> str:
    """One line for the user: our own errors already say what to do; others are named."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    return text if isinstance(exc, USER_ERRORS) and text else f"{type(exc).__name__}: {text}"


def run_turn(session: Session, question: str, cancel: CancelToken, emit: Callable[[Event], None]) -> Answer:
    """Emit every event of `session.ask`. If the session stops without an answer (it raised, or a cancel it did
    not report), emit an error event and a cancelled or error answer keeping what streamed as its unverified draft."""
    streamed: list[str] = []
    try:
        for event in session.ask(question, cancel=cancel):
            if isinstance(event, TextDelta):
                streamed.append(event.text)
            emit(event)
            if isinstance(event, AnswerFinished):
                return event.answer
    except Exception as exc:  # the turn ends with an error answer; the app goes on
        emit(ErrorEvent(error_line(exc), fatal=True))
    text = "".join(streamed)
    status = AnswerStatus.CANCELLED if cancel.cancelled else AnswerStatus.ERROR
    answer = Answer(question=question, text="", status=status, model_text=text, draft=text)
    emit(AnswerFinished(answer))
    return answer
