"""The one store of everything stepscope persists about a profile: converted profiles, trace
indexes, the pod's per-host summaries, each host's kept analysis intermediates (step
database, op metrics...: `stepscope.tools.kept`) and the CLI's cached tool answers.

Every entry is named by a *kind* (``profiles``, ``trace_index``, ``summaries``,
``intermediates``, ``results``),
that kind's format version and the identity of what it was derived from (a file's content
hash or signature, a tool and its options), hashed by `location.key`; it lives at
``<root>/<kind>/<k[:2]>/<k>`` (`location.entry`) under one root chosen in one place
(`location.root`: ``$STEPSCOPE_CACHE_DIR`` or the user cache directory, never beside the
user's profile). Entries are written atomically through `stepscope.tmpfiles` and checked
when read, so a damaged or foreign entry is rebuilt, never trusted. Shapes:

- `entries`: a directory of NumPy arrays plus a JSON header and a manifest of sizes and
  CRC-32s, memory-mapped on reads (profiles, trace indexes);
- `values`: one value (nested dataclasses, tuples, dicts, arrays...) in a ``.npz`` file of
  JSON and raw arrays, so loading an entry can never run code, unlike a pickle (summaries,
  intermediates);
- bytes (`stepscope.result_cache`, the CLI's answers, read before NumPy is imported).

Import the part you need (`location` is standard library only and cheap; `entries` and
`values` import NumPy); this package itself imports nothing.
"""
