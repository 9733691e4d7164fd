"""`stepscope diff BASELINE CANDIDATE`: what changed between two runs, whether it is real,
and (with ``--fail-on``) a CI gate.

BASELINE and CANDIDATE are run directories, profile files (XSpace or Kineto, any mix) or
summaries saved by `stepscope summary`. When a run's first steps are warm-up (a compile), the
step figures and the gate are the steps after them; ``--all-steps`` compares every step.
Exit status: 0 when no rule fails, 1 when a ``--fail-on`` rule fails (one line on stderr says
which and by how much), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from stepscope import tmpfiles
from stepscope.cli.output import Parser
from stepscope.errors import StepscopeError
from stepscope.stats.steps.sources import SOURCES

EXIT_OK, EXIT_REGRESSION = 0, 1


def _rules_help() -> str:
    from stepscope.stats.compare import metric_names

    return (
        "rules: METRIC OP CHANGE, e.g. 'step_time.median>+5%', 'memory.peak>+100MB', "
        "'category.input>+2ms', 'tensor_core.share<-10pp'. Metrics: "
        + ", ".join(metric_names())
        + ". A rule on step time or a category fails only when the change is "
        "statistically significant. Exit status: 0 pass, 1 a rule failed, 2 bad input."
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="compare two runs (or a run and a saved summary); --fail-on for CI",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    if isinstance(parser, Parser):  # metric names import the analysis: only for `diff --help`
        parser.lazy_epilog = _rules_help
    parser.add_argument("baseline", metavar="BASELINE", help="run, profile file or summary JSON")
    parser.add_argument("candidate", metavar="CANDIDATE", help="run, profile file or summary JSON")
    parser.add_argument(
        "--host", help="compare this host of both runs (default: the only host, or all hosts)"
    )
    parser.add_argument("--baseline-host", help="the baseline's host, when names differ")
    parser.add_argument("--candidate-host", help="the candidate's host, when names differ")
    parser.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="RULE",
        help="exit 1 when RULE holds and the change is significant (repeatable)",
    )
    parser.add_argument(
        "--json", nargs="?", const="-", metavar="FILE", help="write the diff as JSON (- : stdout)"
    )
    parser.add_argument(
        "--markdown",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write a Markdown summary, e.g. for a pull request comment (- : stdout)",
    )
    parser.add_argument(
        "--all-steps",
        action="store_true",
        help="compare every step, the warm-up included (default: when a run's first steps "
        "are warm-up, such as a compile, the steps after them; the warm-up is its own row)",
    )
    parser.add_argument(
        "--step-source", choices=("auto", *SOURCES), default="auto", help="where steps come from"
    )
    parser.add_argument("--no-cache", action="store_true", help="convert again, ignoring the cache")
    parser.set_defaults(func=run)


def _write(target: str, text: str, what: str) -> None:
    if target == "-":
        sys.stdout.write(text)
        return
    if os.path.isdir(target):
        raise StepscopeError(f"--{what} {target}: is a directory; give a file name")
    try:  # a file replaced whole, a symlink followed, a FIFO streamed into
        tmpfiles.write_bytes(target, text.encode("utf-8"), user_output=True)
    except OSError as exc:
        raise StepscopeError(f"--{what} {target}: cannot write ({exc.strerror})") from None


def run(args: argparse.Namespace) -> int:
    from stepscope.cli.compare_inputs import load_summary
    from stepscope.cli.diff_render import render_markdown, render_text
    from stepscope.stats.compare import RuleResult, diff_runs, evaluate, metric_names, parse_rule

    if args.json == "-" and args.markdown == "-":
        raise StepscopeError("--json and --markdown cannot both go to stdout; give one a FILE")
    names = metric_names()
    rules = [parse_rule(text, names) for text in args.fail_on]  # bad rules fail before loading
    use_cache = not args.no_cache
    base = load_summary(args.baseline, args.baseline_host or args.host, args.step_source, use_cache)
    cand = load_summary(
        args.candidate, args.candidate_host or args.host, args.step_source, use_cache
    )
    diff = diff_runs(base, cand, once_warm=not args.all_steps)
    results: list[RuleResult] = [evaluate(rule, diff) for rule in rules]
    failed = [r for r in results if r.failed]
    if args.json:
        from stepscope.stats.compare.diff_output import diff_output
        from stepscope.tools import output

        code = EXIT_REGRESSION if failed else EXIT_OK
        data = output.to_json(diff_output(diff, results, code))
        _write(args.json, json.dumps(data, indent=2) + "\n", "json")
    if args.markdown:
        _write(args.markdown, render_markdown(diff, results), "markdown")
    if "-" not in (args.json, args.markdown):
        from stepscope.cli.output import terminal_width

        print(render_text(diff, results, terminal_width()))
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        print(f"stepscope diff: {failed[0].reason}{more}", file=sys.stderr)
        return EXIT_REGRESSION
    return EXIT_OK
