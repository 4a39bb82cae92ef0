"""SIGTERM and SIGHUP while the agents run: noted, then raised as
``Interrupted`` between steps, so the runner can stop its agents first."""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

from governance.errors import INTERRUPTED, HungUp, Interrupted


class StopSignals:
    """While agents run, SIGTERM and SIGHUP only note that the runner must stop;
    the runner checks between steps, kills its agents, removes their workspaces
    and raises ``Interrupted``. Outside the main thread (no signals there), it
    does nothing."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for number in self.SIGNALS:
                self._previous[number] = signal.signal(number, self._note)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _note(self, number: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = number

    def check(self) -> None:
        if self.received is None:
            return
        name = signal.Signals(self.received).name
        kind = HungUp if self.received == signal.SIGHUP else Interrupted
        raise kind(
            f"stopped by {name} while the agents ran: every agent process was killed and "
            "the workspaces were removed; no verdict",
            code=INTERRUPTED,
            signal=name,
        )
