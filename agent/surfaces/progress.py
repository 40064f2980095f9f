"""The index progress line on stderr: live on a terminal, a plain line every few seconds anywhere else."""

from __future__ import annotations

import threading
import time
from typing import TextIO

from rag.indexing.build import IndexProgress
from rag.printable import one_line, visible


class ProgressBar:
    """Renders IndexProgress events; notices always print, progress never goes silent unless `quiet`.

    On a terminal the line is redrawn as events come, and once a second with the time spent when they do not
    (one big file being chunked). Anywhere else (a log, a pipe, CI) a plain line is printed every `interval`
    seconds while a stage runs, so a long build is never minutes of nothing.
    """

    WIDTH = 24
    LABELS = {"scan": "scanning", "chunk": "chunking", "read": "reading", "embed": "embedding", "save": "saving"}
    UNITS = {"scan": "files", "chunk": "files", "read": "pages", "embed": "chunks", "save": "index"}
    INTERVAL = 5.0  # seconds between plain lines
    REDRAW = 0.05  # a terminal does not need more than ~20 redraws a second

    def __init__(self, stream: TextIO, quiet: bool = False, interval: float = INTERVAL) -> None:
        self.stream = stream
        self.quiet = quiet
        self.interval = interval
        self.live = hasattr(stream, "isatty") and stream.isatty()
        self._drawn = False
        self._last = 0.0
        self._current: IndexProgress | None = None
        self._stage_started = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __call__(self, event: IndexProgress) -> None:
        with self._lock:
            if event.stage == "notice":
                self._clear()
                print(f"smoldocs: {visible(event.message)}", file=self.stream, flush=True)
                return
            if self.quiet:
                return
            if event.stage not in self.LABELS:
                self._current = None  # done: nothing left to report
                return
            now = time.monotonic()
            if self._current is None or self._current.stage != event.stage:
                self._stage_started = now
            self._current = event
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
                self._ticker.start()
            if self.live and (event.done >= event.total or now - self._last >= self.REDRAW):
                self._draw(self.line(event))

    def line(self, event: IndexProgress, bar: bool = True) -> str:
        """One progress line, e.g. `embedding [######......] 120/294 chunks  85 chunks/s`."""
        unit = self.UNITS[event.stage]
        if event.total:
            filled = int(self.WIDTH * event.done / event.total)
            count = f"{event.done}/{event.total} {unit}"
        else:  # scanning: the total is not known yet
            filled, count = 0, f"{event.done} {unit} found"
        shown = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] " if bar else ""
        rate = f"  {event.rate:.0f} {unit}/s" if event.rate else ""
        what = f"  {one_line(event.message)}" if event.stage == "chunk" and event.message else ""
        return f"{self.LABELS[event.stage]:<9} {shown}{count}{rate}{what}"

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            self._clear()

    def _tick(self) -> None:
        period = 1.0 if self.live else self.interval
        while not self._stop.wait(period):
            with self._lock:
                event = self._current
                if event is None:
                    continue
                spent = f"  ({time.monotonic() - self._stage_started:.0f} s)"
                if self.live:
                    self._draw(self.line(event) + spent)
                else:
                    print(f"smoldocs: {self.line(event, bar=False)}{spent}", file=self.stream, flush=True)

    def _draw(self, text: str) -> None:
        self._last = time.monotonic()
        self.stream.write("\r\033[K" + text)
        self.stream.flush()
        self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False
