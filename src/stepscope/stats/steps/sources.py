"""The names of the step sources, in the order `find_step_markers` tries them.

Apart from the step types so that the CLI can offer them as choices without importing NumPy.
"""

SOURCES = ("marker", "profiler_step", "keras_batch", "device", "serving", "inferred")
