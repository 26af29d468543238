"""The lakehouse pipeline's own errors: what its command line reports as a usage error.

The pipeline is an app on sparkdelta's public surfaces, so its errors live with it, not
among the library's (``sparkdelta/exceptions.py``, ``kernel/errors.py``).
"""

from __future__ import annotations


class LandingColumnsError(ValueError):
    """The landing files' columns cannot be read by position with one schema."""


class ModeError(RuntimeError):
    """A warehouse built by batch runs given to stream mode, or the other way round."""
