"""The "Uploaded files" source of the sidebar: files read into memory, shared with new tabs.

Files dropped on the uploader are loaded once per set of files and put on the process-wide
`SHARED_UPLOADS` shelf; links to the Trace page then carry `?upload=<token>`, so the tab they
open (a new session) finds the same traces instead of falling back to the embedded store.
"""

from __future__ import annotations

import streamlit as st

from janux.dashboard.ui.login import access
from janux.dashboard.ui.upload_shelf import SHARED_UPLOADS, Upload
from janux.tracing.analysis import formatting as fmt
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceSource

UPLOAD_PARAM = "upload"
"""Query parameter naming the upload a link refers to."""
_LOADED = "janux_upload_loaded"
"""Session key: (fingerprint of the uploaded files, token) of this session's own upload."""
_LINKED = "janux_upload_linked"
"""Session key: token of an upload this session was opened on by a link."""
NO_UPLOAD = "upload:none"
"""Cache key while no file is uploaded."""


def linked_token() -> str | None:
    """The upload token in this page's URL when it names a known upload."""
    token = str(st.query_params.get(UPLOAD_PARAM, ""))
    return token if token and SHARED_UPLOADS.get(token) is not None else None


def _load(files: list[st.runtime.uploaded_file_manager.UploadedFile]) -> Upload:
    """The upload of these files (read once per set of files)."""
    from janux.tracing.sources.file_loader import LoadResult, load_trace_bytes

    fingerprint = tuple((f.name, f.size, f.file_id) for f in files)
    loaded = st.session_state.get(_LOADED)
    if loaded is not None and loaded[0] == fingerprint:
        kept = SHARED_UPLOADS.get(loaded[1])
        if kept is not None:
            return kept
    total = LoadResult()
    room = access().max_upload_decompressed_mb * 1024 * 1024  # for all the files together
    for f in files:
        loaded = load_trace_bytes(f.name, f.getvalue(), max_total_bytes=max(room, 1))
        room -= loaded.decompressed_bytes
        total.merge(loaded)
    memory = MemoryTraceSource(total.spans, rejected=total.rejected, errors=total.errors)
    upload = SHARED_UPLOADS.put(tuple(f.name for f in files), memory)
    st.session_state[_LOADED] = (fingerprint, upload.token)
    return upload


def _earlier() -> Upload | None:
    """An upload this session was linked to (the URL's token, remembered across page changes)."""
    token = st.session_state.get(_LINKED) or linked_token()
    upload = SHARED_UPLOADS.get(token) if token else None
    if upload is not None:
        st.session_state[_LINKED] = upload.token
    return upload


def uploaded_source() -> tuple[str, TraceSource | None, str | None]:
    """The uploader in the sidebar: (cache key, source or None, upload token for links)."""
    files = st.sidebar.file_uploader(
        "OTLP/JSON lines or protobuf files (.json, .jsonl, .pb, .gz, .zst)",
        accept_multiple_files=True,
        key="janux_files",
    )
    upload: Upload | None
    if files:
        upload = _load(files)
    else:
        if st.session_state.pop(_LOADED, None) is not None:
            st.session_state.pop(_LINKED, None)  # the person removed the files: nothing to show
        upload = _earlier()
        if upload is not None:
            names = fmt.markdown_text(", ".join(upload.names))
            st.sidebar.caption(f"Showing the files uploaded earlier: {names}")
    if upload is None:
        return NO_UPLOAD, None, None
    return f"upload:{upload.token}", upload.source, upload.token
