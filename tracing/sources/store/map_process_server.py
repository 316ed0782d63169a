"""The helper process of `map_process`, its side: answers the agent map requests of an embedded store.

`python -m janux.tracing.sources.store.map_process_server DATA_DIR` reads (filter, bucket size) pickles on
stdin and answers each on stdout with `TraceStore.agent_map` of the store in DATA_DIR, until stdin
closes.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path
from typing import BinaryIO

from janux.tracing.sources.store.store import TraceStore


def serve(data_dir: Path, requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer map requests until `requests` ends: (True, AgentMap), or (False, why) when a read
    failed (the helper keeps serving)."""
    with TraceStore(data_dir) as store:
        while True:
            try:
                flt, bucket_ns = pickle.load(requests)  # from the process that started us
            except EOFError:
                return
            try:
                answer: tuple[bool, object] = (True, store.agent_map(flt, bucket_ns))
            except Exception as exc:  # a failed read is answered, never fatal
                answer = (False, f"{type(exc).__name__}: {exc}")
            pickle.dump(answer, answers)
            answers.flush()


def main(argv: list[str] | None = None) -> int:
    """The helper's entry point: `python -m janux.tracing.sources.store.map_process_server DATA_DIR`."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m janux.tracing.sources.store.map_process_server DATA_DIR", file=sys.stderr)
        return 2
    # Answers go to the original stdout only: anything else printed goes to stderr.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        serve(Path(args[0]), sys.stdin.buffer, answers)
    except (BrokenPipeError, KeyboardInterrupt):  # the store that asked is gone, or Ctrl-C on its server
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
