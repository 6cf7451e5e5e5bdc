"""The package's version, in a leaf module: the records that carry it import it from here, not from the
package itself, whose public names import most of the package."""

from __future__ import annotations

__version__ = "0.1.0"
