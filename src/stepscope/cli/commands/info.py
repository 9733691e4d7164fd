"""`stepscope info PATH`: planes, lines with event counts, time span and top event names."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from stepscope.cli.output import count, human_ns, print_json, table

if TYPE_CHECKING:
    from stepscope.model import Profile


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("info", help="summarize a profile file or run directory")
    parser.add_argument("path", help="run directory (.../plugins/profile/<run>) or profile file")
    parser.add_argument("--host", help="only this host")
    parser.add_argument(
        "--top", type=count, default=10, help="number of top event names (default 10)"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--no-cache", action="store_true", help="convert again, ignoring the cache")
    parser.set_defaults(func=run)


def summarize(profile: Profile, top: int) -> dict[str, Any]:
    import numpy as np

    first, last = profile.time_span_ns()
    planes = []
    for plane in profile.planes:
        lines = [
            {"id": line.id, "name": line.label, "events": line.event_count}
            for line in profile.lines[plane.first_line : plane.first_line + plane.line_count]
        ]
        plane_events = sum(
            line.event_count
            for line in profile.lines[plane.first_line : plane.first_line + plane.line_count]
        )
        planes.append(
            {
                "name": plane.name,
                "id": plane.id,
                "lines": lines,
                "events": plane_events,
            }
        )
    counts = (
        np.bincount(profile.name, minlength=len(profile.strings))
        if profile.n_events
        else np.zeros(0)
    )
    total_ns = (
        np.bincount(profile.name, weights=profile.dur_ns, minlength=len(profile.strings))
        if profile.n_events
        else np.zeros(0)
    )
    order = np.argsort(-total_ns, kind="stable")[:top]
    top_names = [
        {"name": profile.strings[int(i)], "count": int(counts[i]), "total_ns": int(total_ns[i])}
        for i in order
        if counts[i] > 0
    ]
    return {
        "host": profile.hostname,
        "source": profile.source,
        "events": profile.n_events,
        "first_ns": first,
        "last_ns": last,
        "span_ns": last - first,
        "planes": planes,
        "top_events": top_names,
        "warnings": profile.warnings,
        "errors": profile.errors,
    }


def run(args: argparse.Namespace) -> int:
    from stepscope.cli.progress import stderr_progress
    from stepscope.tools.analysis import Analysis

    # Each host is read once, one at a time: a run of many hosts never holds more than one.
    analysis = Analysis(
        args.path, use_cache=not args.no_cache, progress=stderr_progress(), max_profiles=1
    )
    hosts = [analysis.run.host(args.host).host] if args.host else analysis.hosts
    summaries = [summarize(analysis.profile(h), args.top) for h in hosts]
    if args.json:
        print_json({"run": analysis.run.name, "path": analysis.run.path, "hosts": summaries})
        return 0
    for summary in summaries:
        print(
            f"host {summary['host']}: {summary['events']:,} events over "
            f"{human_ns(summary['span_ns'])}  ({summary['source']})"
        )
        for plane in summary["planes"]:
            print(
                f"  plane {plane['name']!r}: {len(plane['lines'])} line(s), "
                f"{plane['events']:,} events"
            )
            for line in plane["lines"]:
                print(f"    line {line['id']:>8}  {line['name'][:60]:<60} {line['events']:>9,}")
        if summary["top_events"]:
            print("  top events by total duration:")
            rows = [
                [e["name"][:70], f"{e['count']:,}", human_ns(e["total_ns"])]
                for e in summary["top_events"]
            ]
            print("    " + table(rows, ["name", "count", "total"]).replace("\n", "\n    "))
        for warning in summary["warnings"]:
            print(f"  warning: {warning}")
    return 0
