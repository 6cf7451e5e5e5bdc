"""Silence the Hugging Face libraries' progress bars while our code uses them, and only then.

``huggingface_hub`` draws "Fetching N files" bars and ``transformers`` a "Loading weights" bar on
stderr, in the middle of a run's own output. :func:`hf_progress_off` turns them off through the
libraries' public switches (``huggingface_hub.utils.disable_progress_bars``,
``transformers.utils.logging.disable_progress_bar``) for the block it wraps, and puts them back as they
were afterwards, so a program that imports rescue-bench keeps its own settings. ``transformers`` reads
the hub's switch when it is first imported, so a first import inside the block starts it silent too.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

_TRANSFORMERS_LOGGING = "transformers.utils.logging"


@contextmanager
def hf_progress_off() -> Iterator[None]:
    """No progress bar from huggingface_hub or transformers in the block; their state is restored after."""
    # Imported here, not at the top: the CLI imports this module's users at start, and the hub's utilities
    # pull in its HTTP stack, which the commands that never reach the hub should not pay for.
    from huggingface_hub.utils.tqdm import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    hub_was_off = are_progress_bars_disabled()
    transformers_logging = sys.modules.get(_TRANSFORMERS_LOGGING)
    transformers_was_on = transformers_logging is not None and transformers_logging.is_progress_bar_enabled()
    disable_progress_bars()
    if transformers_logging is not None:
        transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        loaded = sys.modules.get(_TRANSFORMERS_LOGGING)
        # Imported inside the block, transformers would otherwise have started as the hub's switch was.
        was_on = transformers_was_on if transformers_logging is not None else not hub_was_off
        if loaded is not None and was_on:
            loaded.enable_progress_bar()  # this turns the hub's bars on too: the hub's state is set after
        if hub_was_off:
            disable_progress_bars()
        else:
            enable_progress_bars()
