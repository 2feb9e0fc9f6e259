"""``cnndm``: CNN/DailyMail summarisation (Spec-Bench ``summarization``, 80 questions).

Dev split (``--split dev``): the last 8 questions, ids 313-320; eval: the other 72.
"""
from specbench.api import register_task
from specbench_tasks._spec_bench import SpecBenchTask


@register_task("cnndm")
class CNNDMTask(SpecBenchTask):
    categories = ("summarization",)
