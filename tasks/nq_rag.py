"""``nq_rag``: Retrieval-augmented NQ: question + retrieved passages (Spec-Bench ``rag``, 80 questions).

Dev split (``--split dev``): the last 8 questions, ids 553-560; eval: the other 72.
"""
from specbench.api import register_task
from specbench_tasks._spec_bench import SpecBenchTask


@register_task("nq_rag")
class NQRAGTask(SpecBenchTask):
    categories = ("rag",)
