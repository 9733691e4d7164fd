"""Steps: where each step is and what work belongs to it.

- `sources`: the source names; `types`: the step type every source returns (`StepMarkers`);
- `markers`: steps from markers (``_r``/``step_num``, ProfilerStep#N, Keras batches, device
  ``Steps`` lines), trying each source in turn;
- `infer`: steps of a profile without markers, from the trace's repeating structure;
- `groups`: which events work for which step (XProf's event grouping);
- `breakdown`: the step database, each step's time per event type (XProf's
  `xprof/utils/event_span.h`);
- `spans`: step spans on the profile clock for tools that only need "which step holds t".
"""
