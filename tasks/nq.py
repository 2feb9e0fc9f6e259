"""``nq``: Natural Questions open QA (Spec-Bench ``qa``, 80 questions)."""
from specbench.registry import register_task
from tasks._spec_bench import SpecBenchTask


@register_task("nq")
class NQTask(SpecBenchTask):
    categories = ("qa",)
