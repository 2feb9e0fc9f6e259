"""The target model: loading (a hub id, a folder, or the embedded SmolLM2), drafter checkpoints by hub id, dtypes, devices."""
