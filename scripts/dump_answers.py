"""Every answer stepscope gives on the shared fixtures, one file each, to compare two trees.

    python scripts/dump_answers.py OUT_DIR [--only SUBSTRING]
    STEPSCOPE_PURE_PYTHON=1 python scripts/dump_answers.py OUT_DIR2
    diff -r OUT_DIR OUT_DIR2

For each fixture trace (and two runs of several hosts made from them): every tool's JSON (and
CSV where the tool has it), `report`, `summary`, `info --json`, both exports (Chrome JSON,
Perfetto) and the trace viewer's answers to the web page (windows of the whole trace and
zoomed in at two resolutions, its steps, a search). A command that fails keeps its exit
status and error line as its answer, so a changed error shows too. Runs through
`stepscope.cli.main.main` in this process, with a fresh cache directory, so a refactoring
that must not change any answer (a file move, a new registry) is checked byte for byte, with
and without the C accelerators.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"


def traces() -> list[tuple[str, Path]]:
    """(name, path) of every fixture trace: TF/JAX run directories, Kineto and XSpace files."""
    found: list[tuple[str, Path]] = []
    for xplane in sorted(FIXTURES.glob("*/**/plugins/profile/*/*.xplane.pb")):
        run_dir = xplane.parent
        found.append((str(run_dir.relative_to(FIXTURES)).split("/plugins")[0], run_dir))
    for path in sorted(FIXTURES.glob("kineto/*.json.gz")) + sorted(FIXTURES.glob("xspace/*.pb")):
        found.append((path.name, path))
    return found


_SCRATCH: list[str] = []  # set by main()


def _main(argv: list[str]) -> tuple[int, bytes]:
    from stepscope.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse
            status = int(exc.code or 0)
    text = out.getvalue()
    if status:
        # The error lines only: progress and timing lines differ from run to run.
        errors = [line for line in err.getvalue().splitlines() if "error" in line.lower()]
        text += f"\n[exit {status}]\n" + "\n".join(errors) + "\n"
    # The scratch directory's name holds the mode (C or not): an answer naming a file there
    # (`info` of the runs made from the fixtures) names it alike in both dumps.
    for scratch in _SCRATCH:
        text = text.replace(scratch, "<scratch>")
    return status, text.encode("utf-8")


def dump_run(name: str, path: Path, out: Path, tmp: Path, host: str | None = None) -> None:
    from stepscope.tools.registry import all_tools

    folder = out / name.replace("/", "__")
    folder.mkdir(parents=True, exist_ok=True)
    target = [str(path)]
    host_args = ["--host", host] if host else []
    for spec in all_tools():
        _, text = _main(["tool", *target, spec.name, "--json", "-q", *host_args])
        (folder / f"{spec.name}.json").write_bytes(text)
        if "csv" in spec.formats:
            _, text = _main(["tool", *target, spec.name, "--csv", "-q", *host_args])
            (folder / f"{spec.name}.csv").write_bytes(text)
    for command in (["report"], ["summary"], ["info", "--json"]):
        _, text = _main([*command, *target, "-q"] if command[0] != "info" else [*command, *target])
        (folder / f"{command[0]}.txt").write_bytes(text)
    for suffix in ("json", "pftrace"):
        exported = tmp / f"export.{suffix}"
        status, text = _main(["export", *target, "-o", str(exported), "-q", *host_args])
        body = exported.read_bytes() if status == 0 and exported.exists() else text
        (folder / f"export.{suffix}").write_bytes(body)
        exported.unlink(missing_ok=True)
    for answer, body in trace_viewer_answers(path, host).items():
        (folder / answer).write_bytes(body)


# The trace viewer's windows, as fractions of the trace's span, and a resolution.
WINDOWS = ((0.0, 1.0, 2000), (0.0, 1.0, 50), (0.4, 0.45, 2000), (0.5, 0.5001, 300))


def trace_viewer_answers(path: Path, host: str | None) -> dict[str, bytes]:
    """What the trace viewer page asks for (its window, steps and search endpoints)."""
    from stepscope.cli.commands.tool import context_for
    from stepscope.errors import StepscopeError
    from stepscope.tools.registry import get_tool
    from stepscope.tools.trace_viewer import api

    spec = get_tool("trace_viewer")
    try:
        ctx = context_for(str(path), spec, host, spec.parse_options({}), use_cache=False)
        if not spec.available(ctx) or ctx.host == "ALL_HOSTS":
            return {}
        _, index = api.trace_of(ctx)
    except StepscopeError as exc:
        return {"trace_viewer.error": str(exc).encode()}
    span = int(index.end_ns - index.origin_ns)
    out: dict[str, bytes] = {}
    for k, (a, b, res) in enumerate(WINDOWS):
        t0 = int(a * span)
        params = {"t0": str(t0), "t1": str(max(int(b * span), t0 + 1)), "res": str(res)}
        out[f"trace_viewer.window{k}.bin"] = api.window(ctx, params)[0]
    out["trace_viewer.steps.json"] = api.steps(ctx, {})[0]
    out["trace_viewer.search.json"] = api.search(ctx, {"q": "a", "limit": "50"})[0]
    return out


def pod_runs(tmp: Path) -> list[tuple[str, Path]]:
    """Two runs of several hosts: TensorFlow XSpace files side by side, Kineto ranks imported."""
    runs: list[tuple[str, Path]] = []
    tf = tmp / "pod_tf" / "plugins" / "profile" / "r1"
    tf.mkdir(parents=True)
    for host in ("ctl", "ctl_opt", "remote"):
        shutil.copy(next((FIXTURES / "tf" / host).rglob("*.xplane.pb")), tf / f"{host}.xplane.pb")
    runs.append(("pod_tf", tf))
    logdir = tmp / "pod_kineto"
    ranks = [
        FIXTURES / "kineto" / n for n in ("a100_nccl_rank0.json.gz", "a100_triton_tiny.json.gz")
    ]
    status, _ = _main(["import", *map(str, ranks), "--logdir", str(logdir), "--run", "r1", "-q"])
    if status == 0:
        runs.append(("pod_kineto", next(logdir.rglob("*.xplane.pb")).parent))
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", default="", help="fixtures whose name contains this")
    args = parser.parse_args()
    # One fixed scratch path per checkout and mode: answers that name a file (report, errors)
    # stay comparable from run to run, and two checkouts dumping at once do not share it;
    # $STEPSCOPE_DUMP_SCRATCH moves it.
    mode = "c" if os.environ.get("STEPSCOPE_PURE_PYTHON", "0") in ("", "0") else "py"
    checkout = hashlib.sha256(str(REPO).encode()).hexdigest()[:8]
    scratch = os.environ.get("STEPSCOPE_DUMP_SCRATCH") or tempfile.gettempdir()
    tmp = Path(scratch) / f"stepscope-dump-answers-{checkout}-{mode}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    _SCRATCH.append(str(tmp))
    try:
        os.environ["STEPSCOPE_CACHE_DIR"] = str(tmp / "cache")
        work = tmp / "work"
        work.mkdir()
        for name, path in [*traces(), *pod_runs(tmp)]:
            if args.only not in name:
                continue
            print(name, file=sys.stderr, flush=True)
            dump_run(name, path, args.out, work)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
