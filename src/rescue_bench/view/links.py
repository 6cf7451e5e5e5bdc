"""Where each page lives: in the local app (paths with query strings) or in a static bundle (relative
file names, filters in the URL fragment, which the bundle's script applies), so one set of templates serves
both."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, urlencode

Filters = Mapping[str, str]


class ServerLinks:
    """Links of the app served by ``rescue-bench view``."""

    bundle = False

    def overview(self) -> str:
        return "/"

    def instances(self, run: int, filters: Filters) -> str:
        return "/instances?" + urlencode({"run": str(run), **filters})

    def instance(self, run: int, instance_id: str, filters: Filters) -> str:
        query = urlencode({k: v for k, v in {**filters, "run": str(run)}.items() if k not in ("page",)})
        return f"/instances/{quote(instance_id, safe='')}?{query}"

    def compare(self, a: int, b: int) -> str:
        return f"/compare?a={a}&b={b}"

    def matrices(self, run: int) -> str:
        return f"/matrices?run={run}"

    def leaderboard(self) -> str:
        return "/leaderboard"

    def compare_many(self) -> str:
        return "/compare"

    def static(self, name: str) -> str:
        return f"/static/{name}"


class BundleLinks:
    """Links of the static bundle: a few pages beside ``index.html``; the instance lists and pages
    are ``instances.html`` with the run, task, instance and filters in the URL fragment (read by its
    script)."""

    bundle = True

    def overview(self) -> str:
        return "index.html"

    def instances(self, run: int, filters: Filters) -> str:
        rest = {k: v for k, v in filters.items() if k not in ("run", "page", "per", "sort", "desc", "at")}
        return "instances.html#" + urlencode({"run": str(run), **rest})

    def instance(self, run: int, instance_id: str, filters: Filters) -> str:
        rest = {k: v for k, v in filters.items() if k not in ("run", "page", "per", "sort", "desc", "id")}
        return "instances.html#" + urlencode({"run": str(run), **rest, "id": instance_id})

    def compare(self, a: int, b: int) -> str:
        return "compare.html"

    def matrices(self, run: int) -> str:
        return f"matrices-{run}.html"

    def leaderboard(self) -> str:
        return "leaderboard.html"

    def compare_many(self) -> str:
        return "compare.html"

    def static(self, name: str) -> str:
        return f"static/{name}"


Links = ServerLinks | BundleLinks
