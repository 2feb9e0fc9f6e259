"""``wmt``: WMT14 DE->EN translation (Spec-Bench ``translation``, 80 questions)."""
from specbench.registry import register_task
from tasks._spec_bench import SpecBenchTask


@register_task("wmt")
class WMTTask(SpecBenchTask):
    categories = ("translation",)
