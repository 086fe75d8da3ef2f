"""The one error model: `UserError` is what a person or a client can fix, and its message says how.

Every edge catches it once: the CLI prints the message on one line and exits 2; the HTTP API answers
`{"error": kind, "detail": message}` with `status`. Anything else is a bug: logged with its
traceback where it happened, never shown to a client. Standard library only (the hook imports it).
"""

from __future__ import annotations


class UserError(Exception):
    """An error the user can fix. Subclasses set `status` (HTTP) and `kind` (the JSON `error`)."""

    status = 400
    kind = "bad-request"


class BadRequest(UserError):
    """A request or an argument that is malformed."""


class NotFound(UserError):
    status = 404
    kind = "not-found"


class Conflict(UserError):
    status = 409
    kind = "conflict"


class TooLarge(UserError):
    status = 413
    kind = "too-large"


class Unavailable(UserError):
    """The backend cannot do it right now (disk full, read-only); the caller keeps its data."""

    status = 503
    kind = "unavailable"
