"""``replay/<run-dir>``: answer requests with the replies saved in an earlier run, without calling any model.

Use it to re-score a run after a change to parsing or scoring. A request is matched to a saved reply by its
content key (:meth:`rescue_bench.records.Request.content_key`: messages, schema and token limit), so the
replayed run must render the same prompts as the saved one; a request the saved run never answered becomes a
recorded failure, not a model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rescue_bench.errors import ConfigError, DataError
from rescue_bench.models.base import Capabilities, Generation
from rescue_bench.records import Instance, Json, Reply, Request
from rescue_bench.rundir import (
    REQUESTS_FILE,
    RUN_FILE,
    Manifest,
    RequestLine,
    RunDirError,
    read_json_object,
    read_requests,
)


@dataclass(frozen=True, slots=True)
class SavedReply:
    """One saved request outcome: the reply text, or the error the saved run ended with."""

    text: str
    reasoning: str | None
    finish_reason: str | None
    error: str | None


class ReplayProvider:
    """A provider whose answers come from ``<run_dir>/requests.jsonl``."""

    capabilities = Capabilities(
        cacheable=False,
        has_endpoint=False,
        batch_export=False,
        reads_prompts=False,
        settings=frozenset({"seed"}),
    )
    """Replies are already on disk: caching them would only duplicate them; there is no endpoint to set and no
    bill.
    Nothing is generated, so of the settings only the seed counts (it seeds the run's perturbations and
    bootstrap)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.name = f"replay/{run_dir}"
        self._saved = load_saved_replies(self.run_dir)
        self._source_model = _source_model(self.run_dir)

    def identity(self) -> dict[str, Json]:
        return {
            "provider": "replay",
            "model": str(self.run_dir),
            "base_url": None,
            "source": self._source_model,
        }

    def prepare(self, instances: Sequence[Instance]) -> None:
        return None

    def __len__(self) -> int:
        return len(self._saved)

    async def complete(self, request: Request, params: Generation | None = None) -> Reply:
        """The saved reply for ``request``; ``params`` are ignored, since nothing is generated."""
        saved = self._saved.get(request.content_key())
        if saved is None:
            return Reply.failure(
                f"replay: no saved reply for this {request.task} request in {self.run_dir / REQUESTS_FILE} "
                "(were the data, task settings or prompts changed since that run?)"
            )
        if saved.error is not None:
            return Reply.failure(f"replay: the saved run failed this request: {saved.error}")
        # Usage and latency stay zero: replaying spends no tokens and no model time.
        return Reply(text=saved.text, reasoning=saved.reasoning, finish_reason=saved.finish_reason)

    async def aclose(self) -> None:
        return None


def load_saved_replies(run_dir: Path) -> dict[str, SavedReply]:
    """Saved outcomes by content key; a later success replaces an earlier failure (``--retry-failed``).

    Raises:
        ConfigError: the run has no ``requests.jsonl``.
        DataError: a line has no ``request_key``.
        RunDirError: a line is not a request line (:class:`~rescue_bench.rundir.RequestLine`).
    """
    path = run_dir / REQUESTS_FILE
    if not path.is_file():
        raise ConfigError(f"replay: {path} not found; replay/<run-dir> needs the directory of a finished run")
    saved: dict[str, SavedReply] = {}
    for line in read_requests(run_dir):
        if "request_key" not in line.model_fields_set:
            raise DataError(f"{path}: a line has no field 'request_key'")
        outcome = saved_reply(line)
        earlier = saved.get(line.request_key)
        if earlier is None or earlier.error is not None or outcome.error is None:
            saved[line.request_key] = outcome
    return saved


def saved_reply(line: RequestLine) -> SavedReply:
    """The outcome of one ``requests.jsonl`` line (a failure when it saved no reply text).

    >>> saved_reply(RequestLine(request_key="k1", reply={"text": "{}"}))
    SavedReply(text='{}', reasoning=None, finish_reason=None, error=None)
    >>> saved_reply(RequestLine(request_key="k1")).error
    'no reply text was saved'
    """
    reply = line.reply
    error = line.error
    if error is None and "text" not in reply.model_fields_set:
        error = "no reply text was saved"
    return SavedReply(reply.text, reply.reasoning, reply.finish_reason, error)


def _source_model(run_dir: Path) -> Json:
    """The model identity recorded in the saved run's ``run.json``, if readable (it is informative only)."""
    try:
        return Manifest.from_json(read_json_object(run_dir / RUN_FILE) or {}).model
    except RunDirError:
        return None
