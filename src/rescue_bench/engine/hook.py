"""The hook a run applies to each rendered request, and what it notes per instance for ``predictions.jsonl``.

Video mode (:mod:`rescue_bench.video`) is the one hook today: it attaches each row's clip and notes the
clips an instance's request lacked. The caller builds the hook and hands it to the session, so the engine
never reads a clip.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rescue_bench.records import Instance, Request

__all__ = ["Hook", "Hooked", "VideoNote"]


@dataclass(frozen=True, slots=True)
class VideoNote:
    """What one instance's request lacked: problems to record and whether its needed clip was missing."""

    problems: tuple[str, ...] = ()
    unusable: bool = False


@dataclass(frozen=True, slots=True)
class Hooked:
    """A request as the hook changed it, and a note per instance of its batch."""

    request: Request
    notes: Mapping[str, VideoNote]


Hook = Callable[[Request, Sequence[Instance]], Hooked]
"""What the run applies to each rendered request (with the batch it renders), off the event loop."""
