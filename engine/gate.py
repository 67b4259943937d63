"""The visibility gate: what a recall may see changes all at once, never halfway.

A closing session's traces and facts are published together, and an erasure removes a user's memories, turns
and recall-log entries together. Recalls share the gate; a publisher holds it alone for the few milliseconds it
writes. A recall therefore sees a session's facts all or none, and no recall can log (in the recall log) the
text of memories an erasure is removing: it either finished before the erasure began, and the erasure deletes
its log entry, or it starts after and finds nothing.

There is one gate per user partition (``VisibilityGates``): a session's facts and a user's erasure concern that
user's memories and recall log only, so one user's erasure never stalls another user's recall.

Writer-preferring: once a publisher waits, new recalls wait behind it, so a steady stream of recalls cannot
starve a close or an erasure. One process only: the embedded store always runs in one; with Weaviate and arq
workers on other hosts, a worker's close is not gated against another process's recall.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from engine.domain.models import Partition


class VisibilityGate:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._publishing = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Held by a recall for its whole read, and while it logs what it returned."""
        with self._changed:
            while self._publishing or self._waiting:
                self._changed.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                if not self._readers:
                    self._changed.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Held by a publisher (a session's traces and facts, an erasure) while it writes. Not reentrant."""
        with self._changed:
            self._waiting += 1
            try:
                while self._publishing or self._readers:
                    self._changed.wait()
            finally:
                self._waiting -= 1
            self._publishing = True
        try:
            yield
        finally:
            with self._changed:
                self._publishing = False
                self._changed.notify_all()


class VisibilityGates:
    """A gate per partition, made on first use and dropped once nobody holds it (weakly referenced)."""

    def __init__(self) -> None:
        self._gates: weakref.WeakValueDictionary[Partition, VisibilityGate] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def _gate(self, partition: Partition) -> VisibilityGate:
        with self._lock:
            gate = self._gates.get(partition)
            if gate is None:
                gate = self._gates[partition] = VisibilityGate()
            return gate

    @contextmanager
    def shared(self, partition: Partition) -> Iterator[None]:
        gate = self._gate(partition)  # held by this frame while in use, so it outlives the block
        with gate.shared():
            yield

    @contextmanager
    def exclusive(self, partition: Partition) -> Iterator[None]:
        gate = self._gate(partition)
        with gate.exclusive():
            yield
