"""The other summary tools' answers, kept by the command that already did their work
(decision 200).

XProf derives its overview, input pipeline and op stats pages from one analysis of a host
(its op_stats), and users ask for them together: ``stepscope tool RUN overview_page``, then
``input_pipeline_analyzer``, then ``op_stats``. Once the first has built the step database,
the op metrics and the tf.data stats, the other two are a few milliseconds of assembly from
them; as commands of their own each cost a new interpreter with NumPy and stepscope's
imports (0.2 s of CPU at least) to read those intermediates back (decision 170). So a
summary tool's command also builds the other summary tools' answers with their defaults and
keeps them in the result cache (`stepscope.result_cache`) under the keys of the commands that
would ask for them -- same run path as typed, host, format, no options -- which the next
command prints before it imports NumPy (`stepscope.cli.cached_tool`).

Only what is at hand: a sibling is built under `ProfileStore.at_hand_only`, so a sibling
needing an intermediate this process did not compute is skipped, never built (a command
costs no more than its own answer plus assembly). Keys are taken before the work, on the
files as they are then, like the command's own; an answer with hosts left out or read in
part is not kept; ALL_HOSTS is left to its own commands (its per-host summaries are fanned
out per tool).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from stepscope import result_cache
from stepscope.cli import cached_tool

if TYPE_CHECKING:
    from stepscope.tools.context import ToolContext

# The tools XProf builds from one op_stats: what one of them computes, the others read.
SUMMARY_TOOLS = ("overview_page", "input_pipeline_analyzer", "op_stats")


def keys_of(args: argparse.Namespace) -> dict[str, str]:
    """Sibling tool -> the result-cache key of its default command beside ``args`` (the
    command being run), for the siblings not already kept; empty for a tool outside
    `SUMMARY_TOOLS` or a command whose answers are not kept."""
    if args.tool not in SUMMARY_TOOLS or args.no_cache or (args.host and "," in args.host):
        return {}
    found: dict[str, str] = {}
    for name in SUMMARY_TOOLS:
        if name == args.tool:
            continue
        sibling = argparse.Namespace(**{**vars(args), "tool": name, "option": []})
        key = cached_tool.key_of(sibling)
        if key is not None and not result_cache.exists(key):
            found[name] = key
    return found


def keep(ctx: ToolContext, keys: dict[str, str], csv: bool) -> None:
    """Builds and keeps each sibling's answer that ``ctx``'s store can give from what it
    holds in memory (see the module's docstring)."""
    from stepscope.cli.output import json_text
    from stepscope.errors import StepscopeError
    from stepscope.logdir import ALL_HOSTS
    from stepscope.tools import output
    from stepscope.tools.analysis import Analysis, with_host_errors
    from stepscope.tools.context import NotAtHand
    from stepscope.tools.registry import get_tool

    if ctx.host == ALL_HOSTS or ctx.failed or ctx.partial_reads:
        return
    analysis = Analysis(ctx.run, store=ctx.store)
    for name, key in keys.items():
        spec = get_tool(name)
        if csv and "csv" not in spec.formats:
            continue
        try:
            with ctx.store.at_hand_only():
                sibling = analysis.context(spec, ctx.host)
                result = with_host_errors(sibling, spec.build(sibling))
        except (NotAtHand, StepscopeError):  # not at hand, or nothing to show: its own
            continue  # command computes it (and says why, as an error)
        if sibling.partial_reads:
            continue
        text = output.to_csv(result) if csv else json_text(output.to_json(result))
        cached_tool.keep(key, text)
