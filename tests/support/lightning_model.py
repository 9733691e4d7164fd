"""A LightningModule for the scripts that run a real Lightning fit in a subprocess: one
linear layer over 8 features, trained by SGD on a mean-squared error."""

from __future__ import annotations

from typing import Any


def linear_model() -> Any:
    import lightning as L
    import torch

    class Model(L.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Model()
