"""``nq``: Natural Questions open QA (Spec-Bench ``qa``, 80 questions).

Dev split (``--split dev``): the last 8 questions, ids 393-400; eval: the other 72.
"""
from specbench.api import register_task
from specbench_tasks._spec_bench import SpecBenchTask


@register_task("nq")
class NQTask(SpecBenchTask):
    categories = ("qa",)
