"""``replay/<run-dir>``: answer requests with the replies saved in an earlier run, without calling any model.

Use it to re-score a run after a change to parsing or scoring. A request is matched to a saved reply by its
content key (:meth:`rescue_bench.records.Request.content_key`: messages, schema and token limit), so the
replayed run must render the same prompts as the saved one; a request the saved run never answered becomes a
recorded failure, not a model call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rescue_bench.errors import ConfigError, DataError
from rescue_bench.models.base import Capabilities, GenerationParams
from rescue_bench.records import Instance, Json, Reply, Request

REQUESTS_FILE = "requests.jsonl"


@dataclass(frozen=True, slots=True)
class SavedReply:
    """One saved request outcome: the reply text, or the error the saved run ended with."""

    text: str
    reasoning: str | None
    finish_reason: str | None
    error: str | None


class ReplayProvider:
    """A provider whose answers come from ``<run_dir>/requests.jsonl``."""

    capabilities = Capabilities(cacheable=False, has_endpoint=False, batch_export=False)
    """Replies are already on disk: caching them would only duplicate them; there is no endpoint to set."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.name = f"replay/{run_dir}"
        self._saved = load_saved_replies(self.run_dir / REQUESTS_FILE)
        self._source_model = _source_model(self.run_dir / "run.json")

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

    async def complete(self, request: Request, params: GenerationParams | None = None) -> Reply:
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


def load_saved_replies(path: Path) -> dict[str, SavedReply]:
    """Saved outcomes by content key; a later success replaces an earlier failure (``--retry-failed``).

    Raises:
        ConfigError: the file does not exist.
        DataError: a line is not a JSON object with a string ``request_key``.
    """
    if not path.is_file():
        raise ConfigError(f"replay: {path} not found; replay/<run-dir> needs the directory of a finished run")
    saved: dict[str, SavedReply] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            key, outcome = parse_saved_line(line, f"{path}:{number}")
            earlier = saved.get(key)
            if earlier is None or earlier.error is not None or outcome.error is None:
                saved[key] = outcome
    return saved


def parse_saved_line(line: str, where: str) -> tuple[str, SavedReply]:
    """The content key and outcome of one ``requests.jsonl`` line; ``where`` (file:line) prefixes errors.

    >>> key, saved = parse_saved_line('{"request_key": "k1", "error": null, "reply": {"text": "{}"}}', "f:1")
    >>> key, saved.text, saved.error
    ('k1', '{}', None)
    >>> parse_saved_line('{"reply": {}}', "runs/a/requests.jsonl:3")
    Traceback (most recent call last):
    ...
    rescue_bench.errors.DataError: runs/a/requests.jsonl:3: no string field 'request_key'
    """
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a JSON object")
    key = record.get("request_key")
    if not isinstance(key, str):
        raise DataError(f"{where}: no string field 'request_key'")
    raw_reply = record.get("reply")
    reply: dict[str, Json] = raw_reply if isinstance(raw_reply, dict) else {}
    error = record.get("error")
    text = reply.get("text")
    if error is None and not isinstance(text, str):
        error = "no reply text was saved"
    return key, SavedReply(
        text=text if isinstance(text, str) else "",
        reasoning=_str_or_none(reply.get("reasoning")),
        finish_reason=_str_or_none(reply.get("finish_reason")),
        error=None if error is None else str(error),
    )


def _str_or_none(value: Json) -> str | None:
    return value if isinstance(value, str) else None


def _source_model(run_json: Path) -> Json:
    """The model identity recorded in the saved run's ``run.json``, if readable (it is informative only)."""
    try:
        meta = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta.get("model") if isinstance(meta, dict) else None
