"""``rescue-bench view RUN... --bundle DIR``: the viewer as a static site a static host accepts.

A few pages rendered here (``index.html``, ``leaderboard.html``, ``compare.html``, one ``matrices-N.html``
per run) and one page application, ``instances.html``, that draws every instance list and instance page from
data files loaded on demand (``instances.html#run=0&task=rpp&gold=x``, ``...&id=<instance>``). A data file
is a script, ``data/NAME.js``, holding gzip-compressed JSON in base64: a ``<script>`` element loads it from
``file://`` as from any static server (``fetch`` of local files is refused by browsers), and the browser's
``DecompressionStream`` unpacks it. Per run and task there is a file of list rows and one of details; the
conversations and the rebuilt messages are shared by every run of the same data. With ``redact``, none of
transcripts, messages, replies, reasoning, judge rationales or ER/VP answer texts is written.

The directory is written only when it is new, empty or a bundle this tool wrote (:mod:`.outdir`).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rescue_bench.records import Json
from rescue_bench.view import many, outdir, pages
from rescue_bench.view.data import RunView, Source, SourceCache, read_run, run_labels
from rescue_bench.view.links import BundleLinks
from rescue_bench.view.render import fact, make_environment, render_page
from rescue_bench.view.rows import FAILURE_KINDS, InstanceRow
from rescue_bench.view.transcript import THERAPIST, rebuild

STATIC = ("view.css", "view.js", "bundle.js", "favicon.svg")
ROW_FIELDS = (
    "id", "sample", "scenario", "row", "gold", "pred", "valid", "correct", "failure", "problems",
    "judge", "disagree", "prev_gold", "gold_kind", "pred_kind", "repeat", "position", "search",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Written:
    """What a bundle holds: files and bytes."""

    files: int
    size: int


class _Site:
    """The files of the bundle being written into the staging directory."""

    def __init__(self, root: Path, views: Sequence[RunView], redact: bool) -> None:
        self.root = root
        self.views = views
        self.redact = redact
        self.env = make_environment()
        self.links = BundleLinks()
        self.names: list[str] = []
        self.size = 0
        self.messages: dict[str, dict[str, Any]] = {}
        """Per shared messages file: its string table and requests (several runs fill one)."""
        self.conversations: dict[str, dict[str, Any]] = {}

    def write(self, name: str, content: bytes) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        self.names.append(name)
        self.size += len(content)

    def page(self, name: str, template: str, context: pages.Context) -> None:
        html = render_page(
            self.env, template, context, links=self.links, views=self.views, redact=self.redact
        )
        self.write(name, html.encode())

    def data(self, name: str, value: Json | dict[str, Any]) -> None:
        packed = gzip.compress(
            json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(), 9, mtime=0
        )
        text = base64.b64encode(packed).decode("ascii")
        self.write(f"data/{name}.js", f'RB.put("{name}","{text}");\n'.encode())


def _static(site: _Site) -> None:
    for name in STATIC:
        site.write(
            f"static/{name}", resources.files("rescue_bench.view").joinpath("static", name).read_bytes()
        )


def _free_text(site: _Site) -> set[str]:
    """Tasks answered in words (ER, VP): their answers are texts, left out by ``--redact``."""
    return {str(t) for t in site.env.globals["free_text"]}  # type: ignore[attr-defined]


def _row(row: InstanceRow, redact: bool, free_text: bool) -> list[Json]:
    hide = redact and free_text
    return [
        row.instance_id, row.sample_id, row.scenario, row.row_index,
        "" if hide else row.gold, "" if hide else row.predicted, row.valid, row.correct, row.failure,
        list(row.problems), row.judge_score, row.disagreement, row.prev_gold, row.gold_kind, row.pred_kind,
        row.repeat, row.position, "" if redact else row.search,
    ]  # fmt: skip


def _choices(view: RunView) -> dict[str, Any]:
    return {task: pages.choices(view.rows, task) for task in view.tasks}


def _runs(site: _Site) -> None:
    names = run_labels(site.views)
    free_text = sorted(_free_text(site))
    site.data(
        "runs",
        {
            "runs": [
                {
                    "index": v.index,
                    "name": names[v.index],
                    "status": v.status,
                    "partial": v.partial,
                    "degraded": v.degraded,
                    "tasks": v.tasks,
                    "repeats": v.repeats,
                    "choices": _choices(v),
                }
                for v in site.views
            ],
            "redact": site.redact,
            "free_text": free_text,
            "failure_kinds": list(FAILURE_KINDS),
            "fields": list(ROW_FIELDS),
        },
    )
    for view in site.views:
        for task in view.tasks:
            rows = [_row(r, site.redact, task in free_text) for r in view.rows if r.task == task]
            site.data(f"rows-{view.index}-{task}", rows)


def _reply(view: RunView, row: InstanceRow) -> dict[str, Json] | None:
    reply = view.reply_of(row)
    if reply is None:
        return None
    facts = {k: fact(v, k) for k, v in reply.facts.items()}
    return {
        "key": reply.request_key,
        "finish": reply.finish_reason,
        "error": reply.error,
        "text": reply.text,
        "reasoning": reply.reasoning,
        "facts": facts,
    }


def _detail(view: RunView, row: InstanceRow, redact: bool, free_text: bool) -> dict[str, Json]:
    record = view.records[row.position]
    judgments = [
        [j.judge, j.valid, dict(j.scores or {}), list(j.problems or []), None if redact else j.raw]
        for j in view.judgments.get(record.key, ())
    ]
    hide = redact and free_text
    out: dict[str, Json] = {
        "scores": dict(record.scores or {}),
        "meta": record.shown_meta(redact),
        "judgments": judgments,
        "gold": None if hide else record.gold,
        "prediction": None if hide else record.prediction,
        "request": None,
    }
    reply = _reply(view, row)
    if reply is not None:
        if redact:
            reply = {**reply, "text": None, "reasoning": None}
        out["request"] = reply
    return out


def _messages_file(site: _Site, task: str, source: Source) -> str:
    name = f"msgs-{task}-{source.digest[:12]}"
    site.messages.setdefault(name, {"strings": [], "index": {}, "requests": {}})
    return name


def _intern(table: dict[str, Any], text: str) -> int:
    index: dict[str, int] = table["index"]
    if text not in index:
        index[text] = len(table["strings"])
        table["strings"].append(text)
    return index[text]


def _transcript(site: _Site, view: RunView, row: InstanceRow, source: Source) -> dict[str, Json]:
    built = rebuild(source, row.task, row.sample_id, row.instance_id, view.reply_of(row), turns=False)
    out: dict[str, Json] = {"problem": built.problem, "notes": list(built.notes), "origin": built.origin}
    if built.problem:
        return out
    table = site.messages[_messages_file(site, row.task, source)]
    key = hashlib.sha1("\n".join((view.data.manifest.prompt_hashes.get(row.task, ""), *built.batch)).encode())
    request = key.hexdigest()[:16]
    if request not in table["requests"]:
        table["requests"][request] = {
            "messages": [[m.role, _intern(table, m.content)] for m in built.messages],
            "schema": _intern(table, built.schema),
        }
    out.update(
        exact=built.exact,
        request=request,
        batch=list(built.batch),
        shown=list(built.shown),
        target=built.target,
    )
    return out


def _conversations(site: _Site, source: Source) -> str:
    name = f"conv-{source.digest[:12]}"
    if name not in site.conversations:
        site.conversations[name] = {
            sample.sample_id: {
                "participants": list(sample.participants),
                "therapist": THERAPIST,
                "rows": [
                    [r.row_index, r.primary_speaker or "?", r.dialogue_cleaned or ""] for r in sample.rows
                ],
            }
            for sample in source.samples.values()
        }
    return name


def _details(site: _Site, view: RunView, cache: SourceCache) -> None:
    source = None if site.redact else cache.get(view)
    free_text = _free_text(site)
    for task in view.tasks:
        rows = [r for r in view.rows if r.task == task]
        items = {
            f"{r.instance_id}\t{r.repeat}": _detail(view, r, site.redact, task in free_text) for r in rows
        }
        head: dict[str, Json] = {"items": items}
        if source is not None and source.problem:
            head["problem"] = source.problem
        elif source is not None:
            head["messages"] = _messages_file(site, task, source)
            head["conversations"] = _conversations(site, source)
            head["transcripts"] = {
                r.instance_id: _transcript(site, view, r, source) for r in rows if r.repeat == 0
            }
        site.data(f"detail-{view.index}-{task}", head)


def _shared(site: _Site) -> None:
    for name, table in site.messages.items():
        site.data(name, {"strings": table["strings"], "requests": table["requests"]})
    for name, conversations in site.conversations.items():
        site.data(name, conversations)


def _pages(site: _Site) -> None:
    views = site.views
    site.page("index.html", "overview.html", pages.overview(views))
    site.page("instances.html", "app.html", {"title": "Instances"})
    for view in views:
        site.page(site.links.matrices(view.index), "matrices.html", pages.matrices(view))
    if len(views) > 1:
        results = many.variant_results(views)
        site.page("leaderboard.html", "leaderboard.html", many.leaderboard(views, results))
        site.page("compare.html", "many.html", many.compare_page(views, results))


def write_bundle(paths: Sequence[Path], out: Path, *, redact: bool = False) -> Written:
    """Write the static site of the runs ``paths`` to ``out`` (new, empty, or a bundle written before).

    Raises:
        ViewError: a run directory cannot be read.
        BundleDirError: ``out`` is a file, not writable, or holds anything this tool did not write.
    """
    outdir.check(out)  # before any work: a directory that is not ours is refused at once
    views = [read_run(Path(p), i) for i, p in enumerate(paths)]
    staged = outdir.staging(out)
    try:
        site = _Site(staged, views, redact)
        _static(site)
        _pages(site)
        _runs(site)
        cache = SourceCache()
        for view in views:
            _details(site, view, cache)
        _shared(site)
        outdir.install(staged, out, site.names)
    except OSError as exc:
        shutil.rmtree(staged, ignore_errors=True)
        raise outdir.BundleDirError(f"--bundle {out}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return Written(files=len(site.names) + 1, size=site.size)
