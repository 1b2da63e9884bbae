"""The review desk's own errors: input a lead typed that cannot be used, and actions with nothing to act on.

Storage errors (`storage.errors`: database down, schema outdated, unknown exchange or flag) pass through as
they are; these cover what storage cannot know about. Messages are one line and name the bad value.
"""

from __future__ import annotations


class ReviewError(Exception):
    """Base of the desk's own errors; the CLI prints the message on one line and exits 1."""


class InvalidExchangeId(ReviewError, ValueError):
    """The text given as an exchange id is not a UUID."""


class InvalidFlagId(ReviewError, ValueError):
    """The text given as a flag id is not a UUID."""


class InvalidSince(ReviewError, ValueError):
    """A --since value in none of the accepted forms (the CLI exits 2: it is a usage error)."""


class NothingToResolve(ReviewError):
    """`resolve` found no open flag on the exchange, or the named flag belongs to another exchange."""
