"""The stored bytes of an erased user's (or tenant's) documents, deleted from ``MNEMO_UPLOADS``.

A user's files are found by the object names their document rows record (read before the rows are deleted);
a tenant's by their name prefix (``<tenant_id>/``, which every upload must have), which also catches files the
platform uploaded but never imported. Deleting an object purges its chunks from the bucket's stream; an
object already gone is not an error (erasure is retried by calling it again).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from nats.js import JetStreamContext
from nats.js.errors import BucketNotFoundError, NotFoundError, ObjectDeletedError

from mnemo.shared import subjects


async def delete_uploads(js: JetStreamContext, tenant_id: str, names: Iterable[str] | None) -> int:
    """Delete these objects (``names`` None: every object of the tenant); returns how many were deleted."""
    try:
        bucket = await js.object_store(subjects.UPLOADS_BUCKET)
    except (BucketNotFoundError, NotFoundError):
        return 0  # no document was ever uploaded to this deployment
    if names is None:
        try:
            listed = await bucket.list(ignore_deletes=True)
        except NotFoundError:
            listed = []
        names = [o.name for o in listed if o.name and o.name.startswith(f"{tenant_id}/")]
    deleted = 0
    for name in sorted(set(names)):
        if not name.startswith(f"{tenant_id}/"):
            continue  # never another tenant's file, whatever a row says
        with contextlib.suppress(NotFoundError, ObjectDeletedError):
            await bucket.delete(name)
            deleted += 1
    return deleted
