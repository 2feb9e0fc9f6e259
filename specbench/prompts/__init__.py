"""What the model is asked: the task contract (questions, turns, splits) and conversation templates that turn turns into prompt text."""
