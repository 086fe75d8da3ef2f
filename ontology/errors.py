"""The one error model: `UserError` is what a person or a client can fix, and its message says how.

Every edge catches it once: the CLI prints the message on one line and exits 2; the HTTP API answers
`{"error": kind, "detail": message}` with `status`. Anything else is a bug: logged with its
traceback where it happened, never shown to a client. Standard library only (the hook imports it).
"""

from __future__ import annotations


class UserError(Exception):
    """An error the user can fix. Subclasses set `status` (HTTP) and `kind` (the JSON `error`), as
    class keywords: `class Gone(UserError, status=410, kind="gone")`."""

    status = 400
    kind = "bad-request"

    def __init_subclass__(cls, *, status: int | None = None, kind: str | None = None, **rest: object) -> None:
        super().__init_subclass__(**rest)
        cls.status = status or cls.status
        cls.kind = kind or cls.kind

    @property
    def headers(self) -> dict[str, str] | None:
        """Extra response headers (a `Retry-After`, say); none by default."""
        return None


class BadRequest(UserError):
    """A request or an argument that is malformed."""


class NotFound(UserError, status=404, kind="not-found"):
    """An ontology, a concept or a knowledge root that is not there."""


class Conflict(UserError, status=409, kind="conflict"):
    """It exists already, or is in the way (an ontology, a mount point)."""


class TooLarge(UserError, status=413, kind="too-large"):
    """More bytes than the limit allows; refused before they were read."""


class Unavailable(UserError, status=503, kind="unavailable"):
    """The backend cannot do it right now (disk full, read-only); the caller keeps its data."""
