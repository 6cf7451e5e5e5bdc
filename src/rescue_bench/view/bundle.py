"""``rescue-bench view RUN... --bundle DIR``: the viewer's pages as a static, self-contained site.

Every page is a file beside ``index.html`` with relative links, so the site opens from disk (``file://``) or
from any static host. The instance list of each task holds all its rows and the package's script filters them
from the URL fragment (``instances-0-rpp.html#gold=x&correct=no``); previous and next follow the list order.
With ``redact``, transcript text, messages and replies are left out (ids, labels, scores and problems stay).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from jinja2 import Environment

from rescue_bench.view import pages
from rescue_bench.view.data import RunView, SourceCache, read_run
from rescue_bench.view.filters import PER_PAGE_MAX, Query, apply, paginate
from rescue_bench.view.links import BundleLinks
from rescue_bench.view.render import make_environment, render_page


class _Writer:
    def __init__(self, out: Path, views: Sequence[RunView], redact: bool) -> None:
        self.out = out
        self.views = views
        self.redact = redact
        self.env: Environment = make_environment()
        self.links = BundleLinks()
        self.count = 0

    def write(self, name: str, template: str, context: pages.Context) -> None:
        html = render_page(
            self.env, template, context, links=self.links, views=self.views, redact=self.redact
        )
        (self.out / name).write_text(html, encoding="utf-8")
        self.count += 1


def _static(out: Path) -> None:
    target = out / "static"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("view.css", "view.js"):
        source = resources.files("rescue_bench.view").joinpath("static", name)
        target.joinpath(name).write_bytes(source.read_bytes())


def _run_pages(writer: _Writer, view: RunView, data: SourceCache) -> None:
    source = None if writer.redact else data.get(view)
    for task in view.tasks:
        query = Query(run=view.index, task=task, per=PER_PAGE_MAX)
        rows = apply(view.rows, query)
        context = pages.instances(writer.views, query, None)
        context["page"] = paginate(rows, Query(per=max(1, len(rows))))
        writer.write(writer.links.instances(view.index, {"task": task}), "instances.html", context)
        # one page per instance: it shows every repeat of a run with repeats side by side
        firsts = [row for row in rows if row.repeat == 0]
        for row in firsts:
            found = pages.instance(writer.views, query, row.instance_id, source, firsts)
            if found is not None:
                writer.write(writer.links.instance(view.index, row.instance_id, {}), "instance.html", found)
    writer.write(writer.links.matrices(view.index), "matrices.html", pages.matrices(view))


def _compare_pages(writer: _Writer) -> None:
    for a in writer.views:
        for b in writer.views:
            if a.index == b.index:
                continue
            context = pages.compare(a, b, pages.comparison_result(a, b))
            lists = []
            for task in [t for t in a.tasks if t in b.tasks]:
                for kind in ("a_only", "b_only"):
                    query = Query(run=a.index, task=task, vs=b.index, cmp=kind)
                    lists.append((task, kind, apply(a.rows, query, other=b.by_key)))
            writer.write(writer.links.compare(a.index, b.index), "compare.html", {**context, "lists": lists})


def write_bundle(paths: Sequence[Path], out: Path, *, redact: bool = False) -> int:
    """Write the static site of the runs ``paths`` to ``out``; returns the number of pages written.

    Raises:
        ViewError: a run directory cannot be read.
    """
    views = [read_run(Path(p), i) for i, p in enumerate(paths)]
    if out.exists() and (out / "index.html").exists():
        shutil.rmtree(out)  # a previous bundle: replaced whole, so no page of an older run lingers
    out.mkdir(parents=True, exist_ok=True)
    _static(out)
    writer = _Writer(out, views, redact)
    writer.write("index.html", "overview.html", pages.overview(views))
    data = SourceCache()
    for view in views:
        _run_pages(writer, view, data)
    _compare_pages(writer)
    return writer.count
