"""The shape every task module follows, and the settings they share.

A task module exposes module-level constants and four pure functions::

    NAME: str                       # "itp", "rpp", "stp", "ssp", "er", "vp"
    KIND: TaskKind                  # binary | multiclass | ranking | generation
    DEFAULT_BATCH_SIZE: int         # instances per request (ITP 4, RPP 3, STP 3, SSP 3, ER 5, VP 5)
    DEFAULT_CONTEXT_SIZE: int       # -1 all prior rows, 0 none, N the last N prior rows
    MAX_TOKENS: int

    def build(sample: Sample, cfg: TaskConfig) -> list[Instance]
    def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request
    def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]   # never raises on model text
    def score(pred: Prediction, inst: Instance) -> Score
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel

from rescue_bench.data.schema import Sample
from rescue_bench.records import Instance, Prediction, Request, Score, TaskKind

Mode = Literal["dialogue", "audio", "visual", "audiovisual", "video"]
MODES: tuple[Mode, ...] = ("dialogue", "audio", "visual", "audiovisual", "video")
MODE_ALIASES: dict[str, Mode] = {
    "text": "dialogue",
    "turn_video_audio": "video",
    "frames": "video",
    "speaker_frames_audio": "video",
}
GoldField = Literal["auto", "relation_cycle_state", "relation_pattern"]
OptionsT = TypeVar("OptionsT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class TaskConfig:
    """Settings shared by all tasks; ``None`` means the task's own default."""

    mode: Mode = "dialogue"
    context_size: int | None = None
    batch_size: int | None = None
    options: Mapping[str, BaseModel] = field(default_factory=dict, hash=False)
    """Task name -> that task's ``Options`` (a frozen pydantic model); an absent task uses its defaults."""

    def options_for(self, name: str, model_type: type[OptionsT]) -> OptionsT:
        """The options of task ``name``: those given, else the defaults of ``model_type``.

        >>> from pydantic import BaseModel
        >>> class Opts(BaseModel):
        ...     n: int = 5
        >>> given = TaskConfig(options={"x": Opts(n=2)})
        >>> TaskConfig().options_for("x", Opts).n, given.options_for("x", Opts).n
        (5, 2)
        """
        given = self.options.get(name)
        if given is None:
            return model_type()
        if not isinstance(given, model_type):
            raise TypeError(
                f"options of task {name!r} are a {type(given).__name__}, not {model_type.__name__}"
            )
        return given

    def with_defaults(self, context_size: int, batch_size: int) -> TaskConfig:
        return replace(
            self,
            context_size=context_size if self.context_size is None else self.context_size,
            batch_size=batch_size if self.batch_size is None else self.batch_size,
        )


def resolve_mode(name: str) -> Mode:
    """Accept the reference scripts' mode names as aliases."""
    if name in MODES:
        return name
    if name in MODE_ALIASES:
        return MODE_ALIASES[name]
    from rescue_bench.errors import ConfigError

    raise ConfigError(f"unknown mode {name!r}; choose one of {', '.join(MODES)}")


class Task(Protocol):
    """What the engine and the CLI need from a task module."""

    NAME: str
    KIND: TaskKind
    DEFAULT_BATCH_SIZE: int
    DEFAULT_CONTEXT_SIZE: int
    MAX_TOKENS: int

    def build(self, sample: Sample, cfg: TaskConfig) -> list[Instance]: ...

    def render(self, batch: Sequence[Instance], cfg: TaskConfig) -> Request: ...

    def parse(self, text: str, batch: Sequence[Instance]) -> list[Prediction]: ...

    def score(self, pred: Prediction, inst: Instance) -> Score: ...
