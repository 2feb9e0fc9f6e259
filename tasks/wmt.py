"""``wmt``: WMT14 DE->EN translation (Spec-Bench ``translation``, 80 questions).

Dev split (``--split dev``): the last 8 questions, ids 233-240; eval: the other 72.
"""
from specbench.api import register_task
from specbench_tasks._spec_bench import SpecBenchTask


@register_task("wmt")
class WMTTask(SpecBenchTask):
    categories = ("translation",)
