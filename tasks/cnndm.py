"""``cnndm``: CNN/DailyMail summarisation (Spec-Bench ``summarization``, 80 questions)."""
from specbench.registry import register_task
from tasks._spec_bench import SpecBenchTask


@register_task("cnndm")
class CNNDMTask(SpecBenchTask):
    categories = ("summarization",)
