"""Uploaded trace files kept for the life of the dashboard process, each under a random token.

A link in a table ("open ›") opens a new browser tab, and a new tab is a new Streamlit session:
without this shelf the files a person uploaded would be gone there. Links carry the token
(`?upload=<token>`), and any session that knows the token reads the same in-memory source.
Tokens are random (128 bits); the dashboard binds to 127.0.0.1 unless told otherwise. The
shelf holds a few uploads and drops the oldest. No Streamlit import.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from janux.tracing.sources.memory import MemoryTraceSource

MAX_UPLOADS = 8
"""Uploads kept at once; the oldest is dropped first."""


@dataclass(frozen=True, slots=True)
class Upload:
    """One set of uploaded files, loaded into memory."""

    token: str
    """Random id carried by links (`?upload=`)."""
    names: tuple[str, ...]
    """File names, for the sidebar."""
    source: MemoryTraceSource
    """The spans of every file."""


class UploadShelf:
    """Token -> upload, thread-safe, bounded to `max_uploads` (least recently used dropped)."""

    def __init__(self, max_uploads: int = MAX_UPLOADS) -> None:
        self.max_uploads = max_uploads
        self._lock = threading.Lock()
        self._uploads: OrderedDict[str, Upload] = OrderedDict()

    def put(self, names: tuple[str, ...], source: MemoryTraceSource) -> Upload:
        """Keep an upload under a new token."""
        upload = Upload(uuid.uuid4().hex, names, source)
        with self._lock:
            self._uploads[upload.token] = upload
            while len(self._uploads) > self.max_uploads:
                self._uploads.popitem(last=False)
        return upload

    def get(self, token: str) -> Upload | None:
        """The upload with this token, None when unknown or dropped."""
        with self._lock:
            upload = self._uploads.get(token)
            if upload is not None:
                self._uploads.move_to_end(token)
            return upload

    def clear(self) -> None:
        """Forget every upload."""
        with self._lock:
            self._uploads.clear()


SHARED_UPLOADS = UploadShelf()
"""The shelf every session of this process uses."""
