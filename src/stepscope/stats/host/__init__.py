"""Host time that no traced op explains: where the steps' threads spent it and why.

- `untraced`: where "All Others" sits in each step (the gaps of the step threads, located by
  the traced events around them and by Python function);
- `python_samples`: the Python stack sampler's lines and the functions they show;
- `own_work`: the profilers' own start/stop work and what nests in it.
"""
