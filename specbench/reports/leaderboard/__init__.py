"""``specbench leaderboard``: Spec-Bench style tables of several runs, as markdown and one self-contained HTML page
(``build.py`` renders them; ``tables.py`` computes them; ``markdown.py``, ``html.py``, ``plots.py`` draw them)."""
