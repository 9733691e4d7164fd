"""A training process with a stepscope profiler server, for the multi-worker tests.

    python tests/remote/worker.py [--token T] [--allowed-root DIR]

Prints ``READY <port>`` once the server listens (on a free loopback port), then runs short
steps until its stdin closes (the test ended) or it is killed.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import stepscope
import stepscope.server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token")
    parser.add_argument("--allowed-root", action="append", default=[])
    args = parser.parse_args()
    server = stepscope.server.start(0, token=args.token, allowed_roots=args.allowed_root)
    print(f"READY {server.port}", flush=True)
    # The test holds our stdin: when it closes (test over, or the test process died) we exit.
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    step = 0
    while True:
        with stepscope.step(step), stepscope.trace("compute"):
            time.sleep(0.002)
        step += 1


if __name__ == "__main__":
    main()
