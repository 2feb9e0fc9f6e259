"""``gsm8k``: GSM8K grade-school maths (Spec-Bench ``math_reasoning``, 80 questions).

Dev split (``--split dev``): the last 8 questions, ids 473-480; eval: the other 72.
"""
from specbench.api import register_task
from specbench_tasks._spec_bench import SpecBenchTask


@register_task("gsm8k")
class GSM8KTask(SpecBenchTask):
    categories = ("math_reasoning",)
