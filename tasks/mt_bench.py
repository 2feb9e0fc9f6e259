"""``mt_bench``: MT-Bench (80 questions, two turns) from Spec-Bench.

Every method's turn-2 prompt is built from the AR baseline's turn-1 answer (the runner does this), so a
divergence in turn 1 cannot change turn 2's prompt and all methods time identical work.

Dev split (``--split dev``): the last 8 questions, ids 153-160 (all of category humanities, as the
file is ordered by category); eval: the other 72, so ``--limit N`` on eval keeps its first questions.
"""
from specbench.api import register_task
from specbench_tasks._spec_bench import MT_BENCH_CATEGORIES, SpecBenchTask


@register_task("mt_bench")
class MTBenchTask(SpecBenchTask):
    categories = MT_BENCH_CATEGORIES
