"""Where each page lives: in the local app (paths with query strings) or in a static bundle (relative
file names, filters in the URL fragment, which the bundle's script applies), so one set of templates serves
both."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from urllib.parse import quote, urlencode

Filters = Mapping[str, str]
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


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

    def static(self, name: str) -> str:
        return f"/static/{name}"


def slug(instance_id: str) -> str:
    """A file-name-safe, collision-free name for an instance id.

    >>> slug("demo/s01::rpp::12").startswith("demo_s01_rpp_12-")
    True
    >>> slug("demo/s01::rpp::12") == slug("demo_s01::rpp::12")  # the same readable part, told apart
    False
    """
    digest = hashlib.sha1(instance_id.encode()).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', instance_id).strip('_')}-{digest}"


class BundleLinks:
    """Links of the static bundle: every page a file beside ``index.html``; filters go in the fragment."""

    bundle = True

    def overview(self) -> str:
        return "index.html"

    def instances(self, run: int, filters: Filters) -> str:
        task = filters.get("task", "")
        rest = {k: v for k, v in filters.items() if k not in ("task", "run", "page", "per", "sort", "desc")}
        return f"instances-{run}-{task}.html" + (f"#{urlencode(rest)}" if rest else "")

    def instance(self, run: int, instance_id: str, filters: Filters) -> str:
        return f"instance-{run}-{slug(instance_id)}.html"

    def compare(self, a: int, b: int) -> str:
        return f"compare-{a}-{b}.html"

    def matrices(self, run: int) -> str:
        return f"matrices-{run}.html"

    def static(self, name: str) -> str:
        return f"static/{name}"


Links = ServerLinks | BundleLinks
