"""`stepscope server [options] -- train.py ARGS`: run a training script with the profiler
server on (and the flight recorder with ``--recorder``), without changing the script.

    stepscope server --port 6009 --recorder --save-dir logs --keep-steps 50 \\
        --slow-factor 3 --hang-seconds 600 -- train.py --lr 0.1

The script runs in this process as ``python train.py ARGS`` would run it (``__main__``,
``sys.argv``, its directory first on ``sys.path``), on the main thread, so the recorder's
SIGUSR1 handler is installed. `stepscope capture grpc://host:6009 --recent 30s` reaches
the recorder; an uncaught exception is saved before its traceback is printed; the exit
status is the script's.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from stepscope import log
from stepscope.cli.commands.capture import TOKEN_ENV
from stepscope.errors import StepscopeError

# flag (argparse dest) -> the Triggers field and the RecorderConfig field it sets
_TRIGGER_FLAGS = {
    "slow_factor": "slow_step_factor",
    "hang_seconds": "hang_s",
    "min_interval": "min_interval_s",
    "capture_next_steps": "capture_next_steps",
    "warmup_steps": "warmup_steps",
    "settle_steps": "settle_steps",
    "settle_spread": "settle_spread",
    "escalation_factor": "escalation_factor",
}
_CONFIG_FLAGS = {
    "keep_steps": "keep_steps",
    "sampler_hz": "sampler_hz",
    "max_disk": "max_disk_bytes",
    "max_memory": "max_bytes",
    "hostname": "hostname",
    "peer": "peers",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    from stepscope.cli.parser import _size

    parser = subparsers.add_parser(
        "server",
        help="run a Python script with the profiler server (and the flight recorder) on",
        description="Run SCRIPT with the profiler server on, and with --recorder the flight "
        "recorder (docs/flight_recorder.md). Put '--' before the script: "
        "stepscope server --recorder --save-dir logs -- train.py --lr 0.1",
    )
    parser.add_argument("--port", type=int, default=6009, help="port to serve (default 6009)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV),
        help=f"token every request must carry (default: ${TOKEN_ENV})",
    )
    rec = parser.add_argument_group("flight recorder")
    rec.add_argument("--recorder", action="store_true", help="run the flight recorder")
    rec.add_argument("--save-dir", help="log directory the recorder saves runs into")
    rec.add_argument("--keep-steps", type=int, help="steps whose events are kept (50)")
    rec.add_argument(
        "--slow-factor", type=float, help="save a step this many times the median (3; 0: off)"
    )
    rec.add_argument("--hang-seconds", type=float, help="save a step open this long (300; 0: off)")
    rec.add_argument(
        "--min-interval", type=float, help="seconds between two saves of one trigger (300)"
    )
    rec.add_argument("--warmup-steps", type=int, help="first steps never part of the median (20)")
    rec.add_argument(
        "--settle-steps", type=int, help="steps whose median must settle after the warm-up (20)"
    )
    rec.add_argument(
        "--settle-spread",
        type=float,
        help="the slow-step trigger arms when their median is within this many times the "
        "median of the steps before them (1.5)",
    )
    rec.add_argument(
        "--escalation-factor",
        type=float,
        help="save a slow step this many times worse than the last one despite the rate "
        "limit (2; 0: never)",
    )
    rec.add_argument(
        "--capture-next-steps",
        type=int,
        help="after a save, capture this many next steps with the framework profilers (0)",
    )
    rec.add_argument("--sampler-hz", type=int, help="Python stack samples per second (10)")
    rec.add_argument("--max-memory", type=_size, help="the ring's memory bound (64M)")
    rec.add_argument("--max-disk", type=_size, help="disk the recorder's saves may take (1G)")
    rec.add_argument("--hostname", help="host name of the saved runs (default: this host's)")
    rec.add_argument(
        "--peer",
        action="append",
        help="another rank's profiler server (host:port) asked to save the same steps; repeat",
    )
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    parser.set_defaults(func=run)


def recorder_config(args: argparse.Namespace) -> Any:
    """The `RecorderConfig` the flags ask for (None without ``--recorder``); a flag given
    without ``--recorder`` is an error rather than silently unused."""
    from stepscope.capture.recorder import RecorderConfig, Triggers

    given = {
        flag: getattr(args, flag)
        for flag in ("save_dir", *_TRIGGER_FLAGS, *_CONFIG_FLAGS)
        if getattr(args, flag) is not None
    }
    if not args.recorder:
        if given:
            first = next(iter(given)).replace("_", "-")
            raise StepscopeError(f"stepscope server: --{first} needs --recorder")
        return None
    if not args.save_dir:
        raise StepscopeError("stepscope server: --recorder needs --save-dir DIR (where saves go)")
    triggers = Triggers(
        **{field: given[flag] for flag, field in _TRIGGER_FLAGS.items() if flag in given}
    )
    settings = {field: given[flag] for flag, field in _CONFIG_FLAGS.items() if flag in given}
    if "peers" in settings:
        settings["peers"] = tuple(settings["peers"])
    return RecorderConfig(args.save_dir, triggers=triggers, **settings)


def run(args: argparse.Namespace) -> int:
    import runpy

    import stepscope.capture.recorder as flight
    import stepscope.server

    config = recorder_config(args)
    if not os.path.isfile(args.script):
        raise StepscopeError(f"stepscope server: {args.script}: no such script")
    script_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    server = stepscope.server.start(args.port, host=args.host, token=args.token, recorder=config)
    log.info(f"stepscope server: serving {server.address}")
    sys.argv = [args.script, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    code = 0
    try:
        runpy.run_path(args.script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:
        flight._save_uncaught(exc, "the program (uncaught)")  # before the traceback ends it
        raise
    finally:
        if flight.is_running():
            flight.stop()
        server.stop()
    return code
