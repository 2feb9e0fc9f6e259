"""Training drafters: the shared self-distillation data, trainer steps, and checkpoints trained on first use."""
