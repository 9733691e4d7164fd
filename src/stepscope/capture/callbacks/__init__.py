"""Trainer callbacks that mark each training step with `stepscope.step`.

- `stepscope.capture.callbacks.lightning.StepscopeCallback`: PyTorch Lightning
  (``lightning.pytorch`` or ``pytorch_lightning``).
- `stepscope.capture.callbacks.huggingface.StepscopeCallback`: Hugging Face ``Trainer``.

Both are optional: the library is imported only when the callback class is first used.
Without a log directory they only mark steps (for a session you start yourself); with one they
profile a range of steps, like `stepscope.keras.ProfileCallback`. See `steps.StepMarker`.
"""
