"""`stepscope demo`: profile a built-in training loop (no ML framework needed) and show it.

Trains a small NumPy MLP on a deliberately slow, multi-threaded Python input pipeline
(`stepscope.cli.demo_workload`), saves the profile under ``--logdir``, prints a terminal
summary (steps, input share, threads) and opens the run in the web UI (`stepscope serve` on a
free loopback port, and the browser when there is one).

Serving blocks until Ctrl-C, so it happens only in an interactive terminal (or with
``--serve``); a non-interactive run (CI, scripts) prints the command that serves the run and
exits. ``--no-serve`` never serves.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from stepscope.cli.output import human_ns, port_number, table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="profile a built-in example training loop and summarize it",
        description="Train a small NumPy model on a deliberately slow Python input pipeline "
        "for a few steps, profile it with stepscope and show where the time went.",
    )
    parser.add_argument("--logdir", help="where to save the profile (default: a new temp dir)")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 12)")
    parser.add_argument("--fast", action="store_true", help="tiny batches: finishes in ~0.1 s")
    parser.add_argument(
        "--python-tracer", action="store_true", help="also record every Python call"
    )
    serving = parser.add_mutually_exclusive_group()
    serving.add_argument(
        "--serve",
        dest="serve",
        action="store_true",
        default=None,
        help="open the result in the web UI (default in a terminal)",
    )
    serving.add_argument(
        "--no-serve", dest="serve", action="store_false", help="only print the summary"
    )
    parser.add_argument(
        "--port", type=port_number, default=0, help="port for the web UI (default: any free port)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: NumPy and the workload are only needed by this command.
    from dataclasses import replace

    from stepscope.cli.demo_workload import DemoConfig, run_demo

    config = DemoConfig.fast() if args.fast else DemoConfig()
    if args.steps is not None:
        if args.steps < 1:
            from stepscope.errors import StepscopeError

            raise StepscopeError("--steps must be at least 1")
        config = replace(config, steps=args.steps)
    config = replace(config, python_tracer=args.python_tracer)
    logdir = args.logdir or tempfile.mkdtemp(prefix="stepscope-demo-")
    print(
        f"stepscope demo: training a NumPy MLP for {config.steps} steps on a slow input "
        f"pipeline ({config.producers} producer threads); profiling into {logdir}"
    )
    result = run_demo(logdir, config)
    print_summary(result.run_dir)
    serve_it = args.serve if args.serve is not None else sys.stdout.isatty()
    if serve_it:
        open_result(result.run_dir, args.port)
    else:
        print(f"explore it: stepscope serve {Path(result.run_dir).parents[2]}")
    return 0


def open_result(run_dir: Path, port: int = 0) -> None:
    """Serve the run's log directory and open its overview page (blocks until Ctrl-C)."""
    from stepscope.serve.app import serve

    serve(Path(run_dir).parents[2], port=port, open_browser=True, run=Path(run_dir).name)


def summarize_run(run_dir: Path) -> dict[str, Any]:
    """Steps (with their input time) and threads of the run's profile(s), from the same step
    database as every tool, so this first page agrees with `report` and the web UI."""
    from stepscope.tools.analysis import Analysis

    steps: list[dict[str, Any]] = []
    threads: list[tuple[str, int]] = []
    notes: list[str] = []
    files = sorted(Path(run_dir).glob("*.xplane.pb"))
    analysis = Analysis(run_dir)
    for host in analysis.hosts:
        profile = analysis.profile(host)
        threads += [(line.label, line.event_count) for line in profile.lines if line.event_count]
        db = analysis.steps(host)
        notes.append(db.description)
        input_ns = db.category_ns()["input"]
        for k in range(db.n_steps):
            steps.append(
                {
                    "step": int(db.step_num[k]),
                    "dur_ns": int(db.dur_ns[k]),
                    "input_ns": int(input_ns[k]),
                }
            )
    # what bounds the steps, as the overview page (the first page the demo opens) says it
    headline = analysis.tool("overview_page").bound_by.headline if analysis.hosts else ""
    return {
        "files": files,
        "steps": steps,
        "threads": threads,
        "notes": notes,
        "headline": headline,
    }


def print_summary(run_dir: Path) -> None:
    """A terminal summary of the demo's run: per-step time and input wait, threads, files."""
    summary = summarize_run(run_dir)
    steps = summary["steps"]
    rows = [
        [
            str(s["step"]),
            human_ns(s["dur_ns"]),
            human_ns(s["input_ns"]),
            f"{100 * s['input_ns'] / max(s['dur_ns'], 1):.0f}%",
        ]
        for s in steps
    ]
    print()
    print(table(rows, ["step", "time", "waiting for input", "input %"]))
    for note in summary["notes"]:
        print(f"steps: {note}")
    total = sum(s["dur_ns"] for s in steps)
    waited = sum(s["input_ns"] for s in steps)
    if steps:
        share = 100 * waited / max(total, 1)
        # the verdict is the overview's headline, not a rule of the demo's own: "43% ...
        # waiting for input -> the input pipeline is the bottleneck" was printed above a first
        # page that said "Bound by compute: 57.5% ..." (decision 577)
        print(
            f"\naverage step {human_ns(total / len(steps))}; {share:.0f}% of step time is "
            "spent waiting for input"
        )
        if summary["headline"]:
            print(summary["headline"])
    print("threads: " + ", ".join(f"{name} ({count} events)" for name, count in summary["threads"]))
    for path in summary["files"]:
        print(f"profile: {path}")
