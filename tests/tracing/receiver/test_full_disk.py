"""A store whose disk refuses writes (a file-size limit on a real `janux collect`): every request is
refused with a retryable 503, and the log gets one line, not a traceback per request."""

from __future__ import annotations

import resource
import signal
from pathlib import Path

import httpx

from tests.support.otlp_build import pb_request, pb_span, start_collect

PROTO = {"content-type": "application/x-protobuf"}
FILE_LIMIT_BYTES = 4 << 20
REQUESTS = 200


def _limit_file_size() -> None:
    """Writes past 4 MiB in any file fail (EFBIG; Python ignores SIGXFSZ), as on a full disk."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT_BYTES, FILE_LIMIT_BYTES))


def test_a_full_disk_refuses_with_503_and_logs_one_line(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    proc, http_port, _ = start_collect(tmp_path / "data", "--workers", "1", preexec_fn=_limit_file_size,
                                       stderr_path=log)  # fmt: skip
    statuses: dict[int, int] = {}
    blob = "z" * 20_000
    try:
        with httpx.Client(timeout=60) as client:
            for n in range(REQUESTS):
                spans = [pb_span(f"{n + 1:032x}", f"{k + 1:016x}", attrs={"b": blob}) for k in range(20)]
                body = pb_request(spans).SerializeToString()
                answer = client.post(f"http://127.0.0.1:{http_port}/v1/traces", content=body, headers=PROTO)
                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert set(statuses) == {200, 503} and statuses[503] > REQUESTS // 2, statuses
    text = log.read_text()
    failures = [line for line in text.splitlines() if "store commit failed" in line]
    # Before: two tracebacks per refused request (~350 KB for these 200 requests).
    assert "Traceback" not in text and len(failures) == 1, text[:3000]
    assert "retryable" in failures[0] and "disk I/O error" in failures[0]
