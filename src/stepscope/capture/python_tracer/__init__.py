"""The Python tracer (``python_tracer_level=1``): every Python function call, on every thread.

- `tracer`: `PythonTracer`, which picks a backend and runs one recording;
- `backend`: the interface backends implement and the state they share (`TracerState`);
- `c_backend`, `monitoring`, `setprofile`: the backends, fastest first;
- `events`: what is recorded (`PyThreadEvents`) and how it is named, for the saver.
"""
