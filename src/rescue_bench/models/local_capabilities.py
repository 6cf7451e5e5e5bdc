"""What ``local/`` models can do, in a module of its own.

:mod:`rescue_bench.models.factories` declares it before any provider is built, and
:mod:`rescue_bench.models.local` (an optional extra, imported only when a model is built) gives it to its
provider: both read it from here, so neither imports the other for it.
"""

from __future__ import annotations

from typing import Final

from rescue_bench.models.base import Capabilities

LOCAL_CAPABILITIES: Final = Capabilities(
    has_endpoint=False,
    batch_export=False,
    reuses_prompt_prefix=True,
    settings=frozenset({"temperature", "seed", "response_format", "max_tokens"}),
)
"""llama.cpp here samples with a temperature and a seed only, and has no thinking or reasoning switch."""
