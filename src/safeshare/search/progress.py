"""Progress reports of a search: ``progress(checked)``, called now and then, never per node.

A search counts the nodes it checks; :class:`Ticker` turns that count into a
call of the user's callback every ``every`` nodes (a power of two, so the test
in the hot loop is one ``&``), and :meth:`Ticker.done` reports the final count.
Callbacks must be cheap and must not raise; they cannot change the search.
"""

from __future__ import annotations

from collections.abc import Callable

#: ``progress(checked_nodes)``.
Progress = Callable[[int], None]

#: Nodes between two calls of the callback.
EVERY = 64


class Ticker:
    """Calls ``callback(count)`` every :data:`EVERY` ticks (and at :meth:`done`); a no-op without one."""

    __slots__ = ("_mask", "callback", "count")

    def __init__(self, callback: Progress | None, every: int = EVERY) -> None:
        if every < 1 or every & (every - 1):
            raise ValueError("every must be a power of two")
        self.callback = callback
        self.count = 0
        self._mask = every - 1

    def tick(self, n: int = 1) -> None:
        """``n`` more nodes checked."""
        before = self.count
        self.count += n
        if self.callback is not None and (before | self._mask) < self.count:
            self.callback(self.count)

    def done(self) -> None:
        if self.callback is not None:
            self.callback(self.count)
