"""What a capture costs a PyTorch CPU training loop: per step, and at stop (issue #30).

    python benchmarks/bench_torch_capture.py [--part steps|pairs|quads|own|stop]
        [--rounds 41] [--block 40] [--layers 6] [--torch-profile-memory]
        [--torch-save deferred|eager] [--stepscope-profile-memory on|off]
        [--quads 200 --min-quads 30 --width 1] [--torch-steps] [--without-fetch-probe]
        [--sampler-hz N] [--unmarked]

The loop: an MLP of ``--layers`` hidden 64x64 layers trained on random batches, one BLAS
thread (about 600 profiler events a step at 6 layers: 200 steps are the issue's 120k events).

``steps``: per-step CPU time of the process (``time.process_time``: the training thread and
every thread a profiler adds) in blocks of ``--block`` steps, three kinds per round, their
order rotating from round to round: the plain loop; under ``stepscope.start(logdir)`` with
its defaults (torch's own events through the PyTorch bridge, the Python stack sampler, each
step marked by ``stepscope.step``); under ``torch.profiler.profile()`` with its defaults (CPU
ops; ``--torch-profile-memory``: with ``profile_memory=True``, as the bridge runs it when
asked to record allocations (``--stepscope-profile-memory on``) or on a CUDA capture, so both
sides record the same events, in both parts). Start and stop are outside the timed block.
Each round gives the two overheads over the round's plain block, and their difference; the
report is the median over rounds with a distribution-free 95% interval of the median (order
statistics of the binomial), so the figure says how many points it resolves.

``pairs``: the same per-step CPU, measured as direct pairs: a block under
``stepscope.start(logdir)`` defaults and a block under ``torch.profiler.profile`` with the
bridge's own settings (both record the same events), in alternating order; each pair gives
stepscope / torch - 1 (points), and the report is the median with its 95% interval, then the
same for stepscope's own work beside torch's profiler: a block of ``stepscope.start`` with the
bridges off and its step markers, inside a running ``torch.profiler`` against that profiler
alone (the stack sampler and the markers: what stepscope adds on a step).

``quads`` (the issue's per-step row, decision 250): session against session, resolved to a
point on a loaded machine: `stepscope.start` defaults (each step in ``stepscope.step``)
against torch.profiler made exactly as the bridge makes it, in quads of ``--block``-step
blocks ABBA / BAAB in one process; each block's figure is its typical step (the training
thread's lower-quartile step CPU by ``time.thread_time``, plus the CPU the other threads
spent per step), each quad gives stepscope / torch - 1 in points, and quads are added until
the 95% interval of their median is narrower than ``--width``. Printed beside it: the
process-CPU figure and the difference of the steps above the quartile (a cost only some
steps pay). With ``--torch-steps`` torch's side marks its steps too, calling ``prof.step()``
after each (torch's documented loop): marked steps against marked steps, the issue's figure
(decision 281). With ``--without-fetch-probe`` stepscope's blocks end the capture's fetch
probe at their start (decision 971: while installed, the first ~850 steps of a ``range``
loop, its profile function costs 25-30 points), so the markers and the sampler are resolved
apart. With ``--sampler-hz N`` stepscope's blocks sample the Python stacks at N Hz instead of
the default (0: no sampler, and so no fetch probe): the sampler's share of the figure.
``--unmarked``: stepscope's blocks without ``stepscope.step``; with torch's default side, an
unmarked loop against an unmarked loop (decision 1005).

``own``: stepscope's own work per step beside torch.profiler, each part measured directly
(the paired blocks above are bounded by the machine's noise, 5-10 points per pair when other
jobs run): the step marker's CPU (loops of 20,000 empty marked steps against bare loops, in
one session) and the stack sampler thread's CPU (its own thread clock, over runs of ``--block``
x 10 marked steps of the loop under `stepscope.start` defaults beside a running torch.profiler)
as points of the step's CPU; the median of ``--rounds`` and its 95% interval each. torch's
profiler is the same on both sides: the bridge runs it with the settings `_bridge_torch` uses.

``stop``: paired runs of 200 steps, then the capture's end as a user's script pays it, in
process CPU time: ``stepscope.stop()`` (torch's stop and export; stepscope's own planes; with
``--torch-save eager`` also the trace's conversion, merge and XSpace write, which the default
deferred save leaves to the run's first read, decision 910) against torch's ``prof.stop()`` +
``prof.export_chrome_trace(path)``; the median of per-pair ratios and the events saved. Then
stepscope's own part of its stop: the stop less the CPU of the bridge's own calls to torch's
stop and export (timed by wrapping them), against torch's stop + export; and the CPU of the
run's first read (no cache), where a deferred save's merge is paid. Garbage is collected before
each side's timed stop (torch's stop leaves its events as cyclic garbage).

A process's first capture (decision 455) is timed by ``bench_torch_first.py``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from torch_quads import median_interval, quads_part

Step = Callable[[], None]


def mlp(layers: int) -> Any:
    """A seeded MLP of ``layers`` hidden layers on one thread (the workload's and the first
    capture's model)."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    parts: list[Any] = []
    for _ in range(layers):
        parts += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    return torch.nn.Sequential(*parts, torch.nn.Linear(64, 10))


def workload(layers: int) -> Step:
    import torch

    model = mlp(layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(10):
        step()
    return step


def _plain(step: Step, n: int, logdir: str) -> float:
    started = time.process_time()
    for _ in range(n):
        step()
    return (time.process_time() - started) / n


def _stepscope(step: Step, n: int, logdir: str) -> float:
    import stepscope

    stepscope.start(logdir)
    try:
        started = time.process_time()
        for i in range(n):
            with stepscope.step(i):
                step()
        return (time.process_time() - started) / n
    finally:
        stepscope.stop(save=False)


# The bridge's settings when `--stepscope-profile-memory` asks for allocations on or off (None:
# the bridge's default); kept by every `bridges.configure` the parts call.
STEPSCOPE_TORCH: Any = None


def _settings() -> Any:
    """The bridge's settings in this run (`--stepscope-profile-memory`, else its defaults)."""
    from stepscope.capture.bridges.torch_bridge import TorchSettings

    return STEPSCOPE_TORCH or TorchSettings()


def _bridge_memory() -> bool:
    """Whether the bridge records allocations on this CPU-only run."""
    from stepscope.capture.bridges.torch_bridge import profile_memory_for

    return profile_memory_for(_settings(), False)


# torch.profiler's own options (`--torch-profile-memory`: the allocations too, as the PyTorch
# bridge records them when asked or on a CUDA capture, so both sides collect the same events)
TORCH_OPTIONS: dict[str, Any] = {}


def _torch(step: Step, n: int, logdir: str) -> float:
    from torch.profiler import profile

    prof = profile(**TORCH_OPTIONS)
    prof.start()
    try:
        return _plain(step, n, logdir)
    finally:
        prof.stop()


def steps_part(step: Step, rounds: int, block: int) -> None:
    kinds: list[tuple[str, Callable[[Step, int, str], float]]] = [
        ("plain", _plain),
        ("stepscope", _stepscope),
        ("torch.profiler", _torch),
    ]
    load = os.getloadavg()[0]
    ours: list[float] = []
    theirs: list[float] = []
    plain_ms: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench_torch_capture_") as logdir:
        for kind in kinds[1:]:  # warm-up: imports, the bridge's first start
            kind[1](step, block, logdir)
        for r in range(rounds):
            order = kinds[r % 3 :] + kinds[: r % 3]
            got: dict[str, float] = {}
            for name, run in order:
                gc.collect()
                got[name] = run(step, block, logdir)
            ours.append(100 * (got["stepscope"] / got["plain"] - 1))
            theirs.append(100 * (got["torch.profiler"] / got["plain"] - 1))
            plain_ms.append(got["plain"] * 1000)
    diff = [a - b for a, b in zip(ours, theirs, strict=True)]
    print(f"per step, {rounds} rounds of {block} steps (plain {statistics.median(plain_ms):.3f} ms")
    for label, values in (
        ("stepscope.start defaults", ours),
        (f"torch.profiler {TORCH_OPTIONS or 'defaults'}", theirs),
        ("stepscope - torch.profiler", diff),
    ):
        mid, lo, hi = median_interval(values)
        print(
            f"  {label:<28} {mid:+6.2f} points (95% interval of the median {lo:+.2f} .. {hi:+.2f})"
        )
    print(f"  load average {load:.1f} -> {os.getloadavg()[0]:.1f}")


def _bridge_torch(step: Step, n: int, logdir: str) -> float:
    """torch.profiler with the PyTorch bridge's settings (a CPU-only capture)."""
    from torch.profiler import profile

    from stepscope.capture.bridges.torch_bridge import record_shapes_for

    settings = _settings()
    prof = profile(
        record_shapes=record_shapes_for(settings, False),
        profile_memory=_bridge_memory(),
        with_stack=settings.with_stack,
    )
    prof.start()
    try:
        return _plain(step, n, logdir)
    finally:
        prof.stop()


def _additions(step: Step, n: int, logdir: str, ours_first: bool) -> tuple[float, float]:
    """Inside one running torch.profiler (the bridge's settings): a block alone and a block
    with a stepscope session (bridges off) marking each step, in the order given:
    (torch, torch + ours)."""
    from torch.profiler import profile

    from stepscope.capture import bridges

    def alone() -> float:
        return _plain(step, n, logdir)

    def ours() -> float:
        bridges.configure("none")
        try:
            return _stepscope(step, n, logdir)
        finally:
            bridges.configure("auto", torch=STEPSCOPE_TORCH)

    prof = profile(profile_memory=_bridge_memory())
    prof.start()
    try:
        if ours_first:
            with_ours = ours()
            return alone(), with_ours
        first = alone()
        return first, ours()
    finally:
        prof.stop()


def pairs_part(step: Step, pairs: int, block: int) -> None:
    load = os.getloadavg()[0]
    whole: list[float] = []
    added: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench_torch_pairs_") as logdir:
        _stepscope(step, block, logdir)  # warm-up
        _bridge_torch(step, block, logdir)
        for k in range(pairs):
            # before every block: torch's stop leaves its events as cyclic garbage
            # (FunctionEvent parents and children), which the next block would collect
            kinds = [_stepscope, _bridge_torch][:: -1 if k % 2 else 1]
            got = []
            for kind in kinds:
                gc.collect()
                got.append(kind(step, block, logdir))
            ours, theirs = got[:: -1 if k % 2 else 1]
            whole.append(100 * (ours / theirs - 1))
            if os.environ.get("BENCH_VERBOSE"):
                print(f"    pair {k}: stepscope {ours * 1e3:.3f} ms, torch {theirs * 1e3:.3f} ms")
            gc.collect()
            alone, with_ours = _additions(step, block, logdir, ours_first=bool(k % 2))
            added.append(100 * (with_ours / alone - 1))
    print(f"per step, {pairs} pairs of {block}-step blocks (direct pairs)")
    for label, values in (
        (f"stepscope.start / torch.profiler(profile_memory={_bridge_memory()})", whole),
        ("stepscope's own work inside torch.profiler / torch.profiler alone", added),
    ):
        mid, lo, hi = median_interval(values)
        print(f"  {label}: {mid:+.2f} points (95% interval of the median {lo:+.2f} .. {hi:+.2f})")
    print(f"  load average {load:.1f} -> {os.getloadavg()[0]:.1f}")


def _marker_us(n: int) -> float:
    """CPU µs one ``with stepscope.step(i)`` adds (a session on, no bridge, no sampler): a loop
    of ``n`` empty marked steps less a loop of ``n`` bare iterations, in the same session."""
    import stepscope
    from stepscope.capture import bridges

    bridges.configure("none")
    with tempfile.TemporaryDirectory(prefix="bench_torch_marker_") as logdir:
        stepscope.start(logdir, stepscope.ProfilerOptions(python_sampler_hz=0))
        try:
            started = time.thread_time()
            for _ in range(n):
                pass
            bare = time.thread_time() - started
            started = time.thread_time()
            for i in range(n):
                with stepscope.step(i):
                    pass
            marked = time.thread_time() - started
        finally:
            stepscope.stop(save=False)
            bridges.configure("auto", torch=STEPSCOPE_TORCH)
    return (marked - bare) / n * 1e6


def _sampler_share(step: Step, n: int) -> tuple[float, float]:
    """(the stack sampler thread's CPU / the rest of the process's CPU, ms per step) over ``n``
    marked steps under `stepscope.start` defaults beside torch.profiler (bridge off, so the
    torch profiler is the only one and the sampler's thread is told apart by its name)."""
    import threading

    from torch.profiler import profile

    import stepscope
    from stepscope.capture import bridges

    prof = profile(profile_memory=_bridge_memory())
    prof.start()
    bridges.configure("none")
    try:
        with tempfile.TemporaryDirectory(prefix="bench_torch_sampler_") as logdir:
            stepscope.start(logdir)
            try:
                sampler = next(t for t in threading.enumerate() if t.name == "stepscope-sampler")
                assert sampler.ident is not None
                clock = time.pthread_getcpuclockid(sampler.ident)
                started, sampler_started = time.process_time(), time.clock_gettime(clock)
                for i in range(n):
                    with stepscope.step(i):
                        step()
                spent = time.process_time() - started
                sampled = time.clock_gettime(clock) - sampler_started
            finally:
                stepscope.stop(save=False)
    finally:
        bridges.configure("auto", torch=STEPSCOPE_TORCH)
        prof.stop()
    return sampled / (spent - sampled), (spent - sampled) / n * 1e3


def own_part(step: Step, rounds: int, block: int) -> None:
    """stepscope's own work per step beside torch.profiler, each part measured directly: the
    step marker (CPU of ``rounds`` loops of 20,000 empty marked steps against bare loops) and
    the stack sampler's thread (its own CPU clock over ``rounds`` runs of ``block`` x 10
    steps), as points of the step's CPU under torch.profiler. torch.profiler itself is the same
    on both sides (the bridge runs it with the settings `_bridge_torch` times)."""
    load = os.getloadavg()[0]
    markers = [_marker_us(20_000) for _ in range(rounds)]
    shares: list[float] = []
    step_ms: list[float] = []
    for _ in range(rounds):
        gc.collect()
        share, ms = _sampler_share(step, block * 10)
        shares.append(100 * share)
        step_ms.append(ms)
    ms = statistics.median(step_ms)
    marker = median_interval(markers)
    sampler = median_interval(shares)
    points = [100 * m / 1e3 / ms for m in marker]
    print(
        f"stepscope's own work per step beside torch.profiler ({rounds} rounds; step {ms:.3f} ms)"
    )
    print(
        f"  step marker: {marker[0]:.2f} µs (95% interval of the median {marker[1]:.2f} .. "
        f"{marker[2]:.2f}) = {points[0]:+.3f} points ({points[1]:+.3f} .. {points[2]:+.3f})"
    )
    print(
        f"  stack sampler thread: {sampler[0]:+.3f} points of the process's CPU "
        f"({sampler[1]:+.3f} .. {sampler[2]:+.3f})"
    )
    print(
        f"  together {points[0] + sampler[0]:+.3f} points (the intervals' tops added: "
        f"{points[2] + sampler[2]:+.3f}); load average {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )


def _events_saved(run_dir: Any) -> tuple[int, float]:
    """The events of the saved run, and the CPU of its first read (no cache): with the
    deferred save, the merge the stop no longer does (decision 910)."""
    from stepscope.model.runs import open_run
    from stepscope.tools.context import ProfileStore

    gc.collect()
    started = time.process_time()
    run = open_run(str(run_dir))
    events = ProfileStore(use_cache=False).profile(run, run.host_names[0]).n_events
    return events, time.process_time() - started


def _timing_torch_calls(spent: list[float]) -> Callable[[], None]:
    """Add the CPU time of every ``torch.profiler.profile.stop`` and ``export_chrome_trace``
    (the bridge's calls inside `stepscope.stop`) to ``spent[0]``; returns the undo."""
    from torch.profiler import profile

    originals = {name: getattr(profile, name) for name in ("stop", "export_chrome_trace")}

    def timed(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - started

        return call

    for name, original in originals.items():
        setattr(profile, name, timed(original))

    def undo() -> None:
        for name, original in originals.items():
            setattr(profile, name, original)

    return undo


def stop_part(step: Step, pairs: int, n: int) -> None:
    from torch.profiler import profile

    import stepscope

    load = os.getloadavg()[0]
    ratios: list[float] = []
    own_ratios: list[float] = []
    ours_s: list[float] = []
    own_s: list[float] = []
    theirs_s: list[float] = []
    reads_s: list[float] = []
    events = 0
    with tempfile.TemporaryDirectory(prefix="bench_torch_stop_") as tmp:

        def ours() -> tuple[float, float]:
            """stepscope.stop()'s CPU, and the part of it in torch's stop and export."""
            stepscope.start(tmp)
            for i in range(n):
                with stepscope.step(i):
                    step()
            in_torch = [0.0]
            undo = _timing_torch_calls(in_torch)
            gc.collect()  # the other side's garbage (torch's events are cyclic) is not ours
            started = time.process_time()
            try:
                run_dir = stepscope.stop()
            finally:
                spent = time.process_time() - started
                undo()
            nonlocal events
            events, read = _events_saved(run_dir)
            reads_s.append(read)
            return spent, in_torch[0]

        def theirs() -> float:
            prof = profile(**TORCH_OPTIONS)
            prof.start()
            for _ in range(n):
                step()
            gc.collect()
            started = time.process_time()
            prof.stop()
            prof.export_chrome_trace(os.path.join(tmp, "trace.json"))
            return time.process_time() - started

        for k in range(pairs):
            if k % 2:
                b = theirs()
                a, in_torch = ours()
            else:
                a, in_torch = ours()
                b = theirs()
            ours_s.append(a)
            own_s.append(a - in_torch)
            theirs_s.append(b)
            ratios.append(b / a)
            own_ratios.append(b / (a - in_torch))
    print(
        f"stop + save of {n} steps ({events:,} events saved), median of {pairs} pairs: "
        f"stepscope.stop() {statistics.median(ours_s):.3f} s CPU, torch stop + "
        f"export_chrome_trace {statistics.median(theirs_s):.3f} s CPU; torch / stepscope "
        f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}; "
        f"{sum(r >= 1 for r in ratios)} of {pairs} pairs >= 1x); load "
        f"{load:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  of which stepscope's own (the stop less the bridge's torch stop and export: its "
        f"planes, and with the eager save the conversion and merge) "
        f"{statistics.median(own_s):.3f} s CPU; torch stop + export / that "
        f"{statistics.median(own_ratios):.2f}x ({min(own_ratios):.2f}-{max(own_ratios):.2f})"
    )
    print(
        f"  the run's first read (no cache; deferred: the merge): "
        f"{statistics.median(reads_s):.3f} s CPU ({min(reads_s):.3f}-{max(reads_s):.3f}); "
        f"save: {os.environ.get('STEPSCOPE_TORCH_SAVE') or 'the default'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part", choices=("steps", "pairs", "quads", "own", "stop"), action="append"
    )
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--block", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--quads", type=int, default=200, help="quads: at most this many")
    parser.add_argument("--min-quads", type=int, default=30)
    parser.add_argument(
        "--width", type=float, default=1.0, help="quads: stop once the interval is this narrow"
    )
    parser.add_argument(
        "--torch-profile-memory",
        action="store_true",
        help="torch.profiler with profile_memory=True (as the bridge records allocations when "
        "asked or on a CUDA capture) on its side",
    )
    parser.add_argument(
        "--torch-steps",
        action="store_true",
        help="quads: torch's side marks its steps too, with prof.step() after each step (as "
        "torch's documented loop does; stepscope's side marks each with stepscope.step)",
    )
    parser.add_argument(
        "--without-fetch-probe",
        action="store_true",
        help="quads: stepscope's blocks end the capture's fetch probe at start (its cost "
        "measured apart: decision 971)",
    )
    parser.add_argument(
        "--sampler-hz",
        type=int,
        help="quads: stepscope's blocks run the stack sampler at this rate (0: off, and with it "
        "the fetch probe) instead of the default",
    )
    parser.add_argument(
        "--unmarked",
        action="store_true",
        help="quads: stepscope's blocks without stepscope.step, torch's without prof.step()",
    )
    parser.add_argument(
        "--torch-save",
        choices=("deferred", "eager"),
        help="stop: the PyTorch save ($STEPSCOPE_TORCH_SAVE; default: stepscope's, deferred)",
    )
    parser.add_argument(
        "--stepscope-profile-memory",
        choices=("on", "off"),
        help="the PyTorch bridge records allocations (TorchSettings.profile_memory) or not "
        "(default: the bridge's default)",
    )
    args = parser.parse_args()
    if args.stepscope_profile_memory:
        global STEPSCOPE_TORCH
        from stepscope.capture.bridges import TorchSettings, configure

        STEPSCOPE_TORCH = TorchSettings(profile_memory=args.stepscope_profile_memory == "on")
        configure(torch=STEPSCOPE_TORCH)
    if args.torch_save:
        os.environ["STEPSCOPE_TORCH_SAVE"] = args.torch_save
    if args.torch_profile_memory:
        TORCH_OPTIONS["profile_memory"] = True
    print(
        f"torch.profiler options: {TORCH_OPTIONS or 'defaults'}; the bridge's allocations: "
        f"{args.stepscope_profile_memory or 'its default'}"
    )
    step = workload(args.layers)
    for part in args.part or ("steps", "stop"):
        if part == "steps":
            steps_part(step, args.rounds, args.block)
        elif part == "pairs":
            pairs_part(step, args.rounds, args.block)
        elif part == "quads":
            quads_part(
                step,
                args.block,
                args.quads,
                args.min_quads,
                args.width,
                args.torch_steps,
                probe=not args.without_fetch_probe,
                sampler_hz=args.sampler_hz,
                unmarked=args.unmarked,
            )
        elif part == "own":
            own_part(step, args.rounds, args.block)
        else:
            stop_part(step, args.pairs, args.steps)


if __name__ == "__main__":
    main()
