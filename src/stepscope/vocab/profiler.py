"""The profilers' own work: starting and stopping a capture is not the program's work.

TensorFlow's, JAX's and stepscope's start/stop calls run on the user's thread and show in the
trace (Python tracer frames, TSL events); the time they take and everything nested in them is
left out of op tables and steps.
"""

from __future__ import annotations

# (source file, function) of the Python tracer's ``$file.py:123 function`` events.
PYTHON_CALLS = frozenset(
    {
        ("profiler.py", "start_trace"),  # jax.profiler
        ("profiler.py", "stop_trace"),
        ("profiler.py", "start_server"),
        ("profiler_v2.py", "start"),  # tf.profiler.experimental
        ("profiler_v2.py", "stop"),
        ("profiler_v2.py", "__enter__"),
        ("profiler_v2.py", "__exit__"),
        ("profiler.py", "start"),  # torch.profiler
        ("profiler.py", "stop"),
        ("profiler.py", "_transit_action"),
    }
)
# Events of the profilers' own C++ (TSL's profiler session, Kineto's).
EVENT_NAMES = frozenset(
    {
        "ProfilerSession::CollectData",
        "ProfilerSession::Stop",
        "ProfilerSession::Start",
        "ProfilerSession::CollectDataInternal",
        "ProfilerController::Stop",
        "ProfilerController::CollectData",
    }
)


def is_profiler_event(name: str) -> bool:
    """Whether an event of this name is a profiler's own start/stop work."""
    if name in EVENT_NAMES:
        return True
    if not name.startswith("$"):
        return False
    head, _, function = name[1:].rpartition(" ")
    return (head.rsplit(":", 1)[0], function) in PYTHON_CALLS


# A host-plane stat of stepscope's own: the profile's last step is whole. A flight recorder
# save ends with the steps that ended before it (often the slow step it was saved for), so
# XProf's rule drops only the first step, which the ring may have cut, not the last.
LAST_STEP_WHOLE_STAT = "stepscope_last_step_whole"
# ... and its first step is whole: the save cut the ring at that step's start (every trigger
# but a window of time asked by another rank), so XProf's rule keeps it too. A ring holding
# the program's first steps kept its warm-up only so (decision 531).
FIRST_STEP_WHOLE_STAT = "stepscope_first_step_whole"
# Both stats are of stepscope's own markers (decision 671): the analysis applies them only
# when every step marker it reads is one of them, each anchored by this 1 ns event that the
# save writes at its start, one level down (XProf sees a step holding nothing traced by it)
STEP_ANCHOR = "stepscope step"
# A host-plane stat of stepscope's own, on every flight recorder save: how many steps the
# recorder saw (since it started) before the profile's first step. More than 0: the
# recording began mid-run, so its first steps are no program's warm-up: a slow first kept
# step is a slow step, not a compile (decision 530). Absent: a capture, or an older save.
STEPS_BEFORE_STAT = "stepscope_steps_before"

# An event stat of stepscope's own (int64 1), on the get-next event (and its stage) of a
# `stepscope.data` input stage whose ``next()`` found the pass over: the loop's end, and a
# DataLoader's workers' shutdown, which a script timing its iterations counts in no step.
# Such a wait feeds no step (`stats.steps.feeds`; decision 636).
END_OF_SEQUENCE_STAT = "stepscope_end_of_sequence"

# An event stat of stepscope's own (int64 1), on a step marker of a trainer callback
# (Lightning's, Hugging Face's: `capture.callbacks.steps.StepMarker`) begun where the trainer
# last finished other work (the previous step, the epoch's start, evaluation): its start
# already holds its batch's fetch, so no wait before it feeds it (`stats.steps.feeds`):
# evaluation's fetches in that gap are no training step's (decision 638).
STEP_HOLDS_FETCH_STAT = "stepscope_step_holds_fetch"

# Host-plane stats of a capture that met DataLoader worker processes (decision 351): the cores
# the process could run on, and the machine's idle cores on average over the recording.
CPU_COUNT_STAT = "cpu_count"
CPU_IDLE_STAT = "cpu_idle_cores"

# A host-plane stat of stepscope's own: the id of the thread that called ``stepscope.start()``
# when recording began in that call (no delay; not the flight recorder's ring nor a remote
# capture). A loop on that thread was not cut by the capture's start: its first iteration is
# whole, which tells inferred steps where an iteration begins (stats/steps/cycle.py).
STARTED_ON_THREAD_STAT = "stepscope_started_on_thread"
# ... and, with it, when that ``start()`` returned to its caller: ns on the host plane's time
# base (since ``profile_start_time``). The capture's own start-up (hooks, the sampler's
# thread, the fetch probe) runs after recording began and before it; what a framework does
# on the thread then (JAX's garbage collection) is no iteration of the loop that follows:
# step 0 begins no earlier (stats/steps/cycle.py, decision 1048).
START_RETURNED_STAT = "stepscope_start_returned_ns"

# A host-plane stat of stepscope's own: the clock its times count on, as
# ``"<hostname> boot <boot id>"`` (Linux's /proc/sys/kernel/random/boot_id; absent where it
# cannot be read). Profiles that name the same one were recorded by one kernel: their
# ``profile_start_time`` (wall-clock ns, the time zero of the file's times) are readings of
# one clock, so the ranks of a job on one machine need no clock offset estimated between them
# (`stepscope.stats.stragglers`, decision 940).
CLOCK_STAT = "stepscope_clock"

# The line, in the host plane, of the fetches timed by `stepscope.capture.fetch_probe`: the
# first times the frame that called `stepscope.start` asked an iterator for its next item
# (docs/formats/python_samples.md). Line id: this offset plus the thread's line id.
FETCHES_LINE = "Python fetches"
FETCHES_LINE_OFFSET = 1 << 49
# Its events' stats (int64) when the loop is a ``for`` statement: the loop's first source
# line (the ``for``) and its body's last, in the loop's file (decision 681).
LOOP_FIRST_LINE_STAT = "loop_first_line"
LOOP_LAST_LINE_STAT = "loop_last_line"

# Which frames are the program's own code (not the standard library, an installed package
# or stepscope: `capture.fetch_probe.is_program_code`), where frame names keep only the file's
# base name (decision 1033): on a "Python samples" run, the indices in its ``stack``
# (outermost 0), comma-joined ('' for none); on the Python tracer's event metadata, 1.
OWN_FRAMES_STAT = "own_frames"
OWN_CODE_STAT = "own_code"

# The line, in the host plane, of a sampled thread's CPU time as the stack sampler read it
# (Linux schedstat, docs/formats/python_samples.md): one event per interval between two
# samples, its stats the thread's time on a CPU and its time runnable but waiting for one in
# that interval (ns). Line id: this offset plus the thread's line id.
THREAD_CPU_LINE = "Thread CPU"
THREAD_CPU_LINE_OFFSET = 1 << 50
ON_CPU_STAT = "on_cpu_ns"
RUNNABLE_STAT = "runnable_ns"

# stepscope's own frames between a loop and the iterable `stepscope.steps` (or
# `stepscope.data.instrument`) wraps, as the stack sampler names them ("func (file)"): the
# loop resumes ``_steps``, which asks the wrapper's ``__next__``, which calls the user's
# iterator through ``_run_stage`` (capture/step.py, capture/data.py). A stack through them
# is the user's iterator fetching, never stepscope's (decision 587). The first fetch begins
# the loader's pass (decision 635): ``_first`` and ``_begin_then_next`` call ``_begin``,
# which calls the loader's ``iter()``, a DataLoader's through the loader hook's ``__iter__``
# (capture/loader_hook.py); a stack through them names the loader's frame. The fetch
# probe's profile function (capture/fetch_probe.py), run as the loop enters ``_steps``, is
# stepscope at work too (decision 639).
STEPS_FRAME = "_steps (step.py)"
STAGE_FRAME = "_run_stage (data.py)"
WRAPPER_FRAMES = frozenset(
    {
        STEPS_FRAME,
        "__next__ (data.py)",
        "_first (data.py)",
        STAGE_FRAME,
        "_begin_then_next (data.py)",
        "_begin (data.py)",
        "__iter__ (loader_hook.py)",
        "_probe (fetch_probe.py)",
        # what `_steps`' inline input stage calls on every step (decision 900): its event
        # buffer, the sampler's and the recorder's hooks; a sample in them is stepscope at
        # work ("the loop's Python iterator admit (annotations.py)" was said)
        "admit (annotations.py)",
        "_report_full (step.py)",
        "add_current_thread (python_sampler.py)",
        "_on_step_open (recorder.py)",
        "marked (fetch_steps.py)",
    }
)
