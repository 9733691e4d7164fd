"""The trace viewer's index: every event of a (run, host) organised for windowed queries.

- `index`: the index itself (`TraceIndex`), built once per profile and stored in its cache;
- `lod`: nesting depth and level of detail (which events a zoomed-out window draws);
- `window`: window and box queries on the index;
- `tracks`: per-line sections and the step track; `flows`: arrows between events;
  `counters`: counter tracks and their sampling; `search`: the name index;
- `segments`: vectorized searches over arrays cut into sorted segments (CSR layouts).
"""
