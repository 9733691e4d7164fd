"""What `stepscope summary` and `stepscope diff` compare: a run (directory or profile file,
one host or all) or a saved summary JSON."""

from __future__ import annotations

import json
import os

from stepscope.cli.hosts import report_partial
from stepscope.cli.progress import stderr_progress
from stepscope.errors import StepscopeError
from stepscope.model import ALL_HOSTS, Run
from stepscope.stats.compare import RunSummary, looks_like_summary
from stepscope.tools.analysis import Analysis


def pick_host(run: Run, host: str | None) -> str:
    """The host to compare: the one asked for; the only host of a run that lacks it (host
    names differ between machines, so a one-host run matches any name); ALL_HOSTS (steps
    matched by number) when no host is asked and the run has several."""
    if host is None or host == ALL_HOSTS:
        return run.hosts[0].host if len(run.hosts) == 1 else ALL_HOSTS
    if host in run.host_names:
        return host
    if len(run.hosts) == 1:
        return run.hosts[0].host
    raise StepscopeError(
        f"run {run.name!r} has no host {host!r}; hosts: {', '.join(run.host_names)} "
        f"(or leave --host out to compare all hosts)"
    )


def _summary_file(path: str) -> RunSummary | None:
    if not path.endswith(".json") or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        head = f.read(200)
    if not looks_like_summary(head):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise StepscopeError(f"{path}: cannot read the summary ({exc})") from None
    return RunSummary.from_json(data, path)


def load_summary(
    path: str, host: str | None, step_source: str = "auto", use_cache: bool = True
) -> RunSummary:
    """A saved summary as it is, or the summary of a run's host (``host``: see pick_host)."""
    saved = _summary_file(path)
    if saved is not None:
        return saved
    analysis = Analysis(path, use_cache=use_cache, progress=stderr_progress())
    picked = pick_host(analysis.run, host)
    summary = analysis.summary(picked, step_source)
    # a baseline or a diff side made from part of a recording says so, as `report` and
    # `tool` do: a cut trace's summary was written and diffed without a word (decision 613)
    report_partial(analysis.partial_reads(picked))
    return summary
