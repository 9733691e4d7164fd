"""Every shell command of README.md, CONTRIBUTING.md and docs/ is checked, as written.

`tests/test_docs_examples.py` runs the Python examples; this runs the shell ones. Each
``bash``/``sh`` block (and each unmarked block of ``stepscope`` lines) is cut into commands
(continuation lines joined, comments dropped). A ``stepscope`` command is parsed by the real
command line (every subcommand, flag and choice must exist); the ones that answer from a
profile also run, in this process, on copies of the fixtures (`test_commands_run`). A
``python`` script's flags must be in its ``--help``. Any other program (pip, docker, ssh...)
must be in `OTHER_PROGRAMS` with the reason it is not run here, so a new kind of command fails
`test_every_command_is_checked` until someone says how it is checked.
"""

from __future__ import annotations

import contextlib
import glob
import io
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures import FIXTURES, REPO, tf_xplane

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)

# Placeholders the pages leave to the reader -> what the commands run on here (paths made by
# `_workspace`). Only whole words are replaced.
PLACEHOLDERS = {
    "RUN": "a/plugins/profile/run_a",
    "$RUN": "a/plugins/profile/run_a",
    "RUN_DIR_OR_FILE": "a/plugins/profile/run_a",
    "BASE_RUN": "a/plugins/profile/run_a",
    "BASELINE": "a/plugins/profile/run_a",
    "NEW_RUN": "b/plugins/profile/run_b",
    "CANDIDATE": "b/plugins/profile/run_b",
    "LOGDIR": "logdir",
    "H": "ctl",
    "H1": "ctl",
    "H2": "ctl",
    "S": "auto",
    "RULE": "step_time.median>+50%",
    "T": "token",
    "NAME": "imported",
    "FILE": "out.txt",
    "SELECT ...": "SELECT 1 AS x",
    "/logs/job/plugins/profile/2026_01_01": "pod/plugins/profile/run1",
}
# stepscope commands that start a server, a capture or a program, or wait on a terminal:
# parsed, not run here (their own tests run them: tests/serve, tests/remote, tests/agent,
# tests/capture).
NOT_RUN = {"serve", "server", "mcp", "capture", "demo", "doctor"}
# Python scripts not run with --help here, and why.
SCRIPTS_NOT_RUN = {"setup.py": "builds the C extensions: CI's strict build does (scripts/test.sh)"}
# Other programs the pages name, and why they are not run by this test.
OTHER_PROGRAMS = {
    "python3": "the set-up's `python3 -m venv`: CI's own set-up (scripts/test.sh)",
    "pip": "installing; CI installs every extra (scripts/test.sh)",
    "bash": "scripts/test.sh is CI itself (.ci/run)",
    "claude": "a coding agent's command; `stepscope mcp` is run by tests/agent",
    "dask": "a Dask scheduler and workers: the same path runs in docs/pod_scale.md's Python "
    "example (LocalCluster, tests/test_docs_examples.py)",
    "srun": "needs a Slurm cluster",
    "docker": "needs Docker and a registry",
    "ssh": "a tunnel from a laptop",
    "tensorboard": "TensorBoard's plugin is run by tests/serve/test_tensorboard_plugin.py",
    "export": "sets a variable of the Slurm script",
    "flock": "runs the benchmark named after it (checked as a python script)",
    "ruff": "a check CI runs (scripts/test.sh)",
    "mypy": "a check CI runs (scripts/test.sh)",
    "lint-imports": "a check CI runs (scripts/test.sh)",
    "pytest": "CI runs the suites (scripts/test.sh)",
}


def _pages() -> list[Path]:
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]


def _commands(body: str) -> list[list[str]]:
    """The block's commands as argument lists: continuation lines joined, comments dropped,
    ``&&`` and a trailing ``&`` separating commands, ``VAR=value`` prefixes dropped."""
    text = re.sub(r"\\\n", " ", body)
    text = re.sub(r"\n\s+(?=\[)", " ", text)  # a synopsis's next line of [--options]
    text = re.sub(r"\$\([^)]*\)", "x", text)  # $(openssl rand -hex 16)
    found: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if command and command[-1] in (">", ">>"):
                command.pop()  # a redirection and its file
            elif word in ("&&", "&"):
                while command and re.fullmatch(r"[A-Z_]+=.*", command[0]):
                    command.pop(0)
                if command:
                    found.append(command)
                command = []
            else:
                command.append(word)
    return found


def _shell_blocks() -> list[tuple[str, int, list[list[str]]]]:
    """(page, n-th shell block from 1, its commands) of every page."""
    out = []
    for page in _pages():
        n = 0
        for match in _BLOCK.finditer(page.read_text()):
            lang, body = match.group(1), match.group(2)
            lines = [ln for ln in body.splitlines() if ln.strip()]
            if lang == "" and not all(ln.startswith("stepscope ") for ln in lines):
                continue  # a layout or a listing, not commands
            commands = _commands(body) if lang in ("bash", "sh", "") else []
            if commands:
                n += 1
                out.append((str(page.relative_to(REPO)), n, commands))
    return out


def _program(command: list[str]) -> str:
    program = Path(command[0]).name
    if program in ("python", "python3") and command[1:2] == ["-m"]:
        return command[2] if command[2] != "venv" else "python3"
    return program


def _stepscope_argv(command: list[str]) -> list[str]:
    """A documented stepscope command as the command line receives it: the placeholders
    filled, ``[--flag]`` optional parts kept, ``a|b`` alternatives read as the first, ``...``
    (more of the same) dropped."""
    argv = []
    for word in command[1:]:
        word = word.strip("[]")
        if not word or word == "...":
            continue
        if "|" in word and " " not in word:
            word = word.split("|")[0]
        argv.append(PLACEHOLDERS.get(word, word))
    return argv


def _all_commands() -> list[tuple[str, list[str]]]:
    return [
        (f"{page}:{n}", command) for page, n, commands in _shell_blocks() for command in commands
    ]


def test_every_command_is_checked() -> None:
    unknown = sorted(
        {
            f"{where}: {_program(c)}"
            for where, c in _all_commands()
            if _program(c) not in ("stepscope", "python", "python3")
            and _program(c) not in OTHER_PROGRAMS
        }
    )
    assert unknown == [], "say in OTHER_PROGRAMS how these commands are checked"
    assert len(_all_commands()) >= 40  # the blocks were found


def test_every_stepscope_command_parses() -> None:
    from stepscope.cli.main import build_parser

    parser = build_parser()
    failed = []
    for where, command in _all_commands():
        if _program(command) != "stepscope":
            continue
        argv = _stepscope_argv(command)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                parser.parse_args(argv)
        except SystemExit as exc:
            if exc.code:
                failed.append(f"{where}: stepscope {shlex.join(argv)}: {err.getvalue()[-200:]}")
    assert failed == []


@pytest.mark.integration
def test_python_scripts_have_the_flags_the_pages_give(tmp_path: Path) -> None:
    checked = 0
    for where, command in _all_commands():
        words = command[command.index("flock") + 2 :] if command[0] == "flock" else command
        if Path(words[0]).name not in ("python", "python3") or words[1] == "-m":
            continue
        if words[1] in SCRIPTS_NOT_RUN:
            continue
        script = REPO / words[1]
        assert script.is_file(), f"{where}: no script {words[1]}"
        shown = subprocess.run(
            [sys.executable, str(script), "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert shown.returncode == 0, f"{where}: {words[1]} --help failed: {shown.stderr}"
        for flag in (w.split("=")[0] for w in words[2:] if w.startswith("--")):
            assert flag in shown.stdout, f"{where}: {words[1]} has no {flag}"
        checked += 1
    assert checked >= 4


def _workspace(tmp_path: Path) -> None:
    """Runs a and b (one TensorFlow host each), pod (two hosts), a log directory holding one
    run, and two PyTorch traces named as `stepscope import`'s example names them."""
    for name, hosts in (
        ("a/plugins/profile/run_a", ("ctl",)),
        ("b/plugins/profile/run_b", ("ctl_opt",)),
        ("pod/plugins/profile/run1", ("ctl", "ctl_opt")),
        ("logdir/plugins/profile/r1", ("ctl",)),
    ):
        run = tmp_path / name
        run.mkdir(parents=True)
        for host in hosts:
            shutil.copy(tf_xplane(host), run / f"{host}.xplane.pb")
    for rank, name in enumerate(("a100_nccl_rank0.json.gz", "a100_triton_tiny.json.gz")):
        shutil.copy(FIXTURES / "kineto" / name, tmp_path / f"rank{rank}.pt.trace.json.gz")


def _runnable() -> list[tuple[str, list[str]]]:
    """The documented stepscope commands that answer from a profile here: not those that
    start something (`NOT_RUN`), need a Dask cluster, or are a synopsis (``[--flag]``)."""
    return [
        (where, _stepscope_argv(command))
        for where, command in _all_commands()
        if _program(command) == "stepscope"
        and command[1] not in NOT_RUN
        and not any(w.startswith("--dask") or w.startswith("[") for w in command)
    ]


@pytest.mark.integration
def test_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepscope.cli.main import main

    _workspace(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    # `stepscope query RUN` without SQL: a shell on a terminal, the SQL of its stdin here
    monkeypatch.setattr(sys, "stdin", io.StringIO("SELECT count(*) FROM steps"))
    failed = []
    for where, argv in _runnable():
        argv = [w for word in argv for w in (sorted(glob.glob(word)) or [word])]
        err = io.StringIO()
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # some answers write bytes
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
        # `diff --fail-on` exits 1 when a rule fails: the gate working, not the command
        if status not in ((0, 1) if argv[0] == "diff" else (0,)):
            failed.append(f"{where}: stepscope {shlex.join(argv)} -> {status}: {err.getvalue()}")
    assert failed == []
    assert len(_runnable()) >= 15
