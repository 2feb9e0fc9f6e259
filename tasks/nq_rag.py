"""``nq_rag``: Retrieval-augmented NQ: question + retrieved passages (Spec-Bench ``rag``, 80 questions)."""
from specbench.registry import register_task
from tasks._spec_bench import SpecBenchTask


@register_task("nq_rag")
class NQRAGTask(SpecBenchTask):
    categories = ("rag",)
