"""UTC timestamps, one format: ISO 8601 with microseconds and `Z`, e.g. 2026-04-05T14:45:00.000000Z.

Fixed width, so string order is time order: receipt times in the archive and the graph, stated
times after `store.normalize_ts`, the bridge's last delivery and its log. Standard library only.
"""

from __future__ import annotations

from datetime import datetime, timezone

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utc_text(moment: datetime) -> str:
    """`moment` in the one format; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime(FORMAT)


def utc_now() -> str:
    return utc_text(datetime.now(timezone.utc))


def utc_from_epoch(seconds: float) -> str:
    return utc_text(datetime.fromtimestamp(seconds, timezone.utc))
