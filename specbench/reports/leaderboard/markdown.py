"""Markdown rendering of leaderboard tables (GitHub-flavoured pipe tables)."""
from __future__ import annotations

from typing import Any

from specbench.reports.leaderboard.tables import Group, Table
from specbench.reports.projection_columns import projection_notes, projection_table
from specbench.reports.projection_files import PROJECTED_SECTION
from specbench.reports.projection_table import Projection
from specbench.reports.table import html_text, md_text
from specbench.reports.timing_sections import FLAGS_TITLE, IMPLAUSIBLE_TITLE, flag_lines, implausible_lines

TEXT_COLUMNS = {"Lossless", "run", "hardware", "draft shape"}


def table_md(t: Table) -> str:
    """A pipe table; label columns (the first, "Lossless") left-aligned, numbers right-aligned."""
    align = [":---"] + [":---" if h in TEXT_COLUMNS else "---:" for h in t.headers[1:]]
    lines = ["| " + " | ".join(map(md_text, t.headers)) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in t.rows]
    return "\n".join(lines)


def projected_md(proj: Projection) -> str:
    """A run's projected table (``--onto``), with its notes as a list under it."""
    table = projection_table(proj)
    notes = "\n".join(f"- {html_text(line)}" for line in projection_notes(proj))
    return f"**{html_text(table.title)}**\n\n{table_md(table)}\n\n{notes}"


def leaderboard_md(groups: list[Group], profile_tables: list[Table], profile: dict[str, Any] | None,
                   published: list[Table] | None = None, *, projected: list[Projection] | None = None) -> str:
    """The whole ``leaderboard.md``: per group its tables and footer, then the runs' projections (``--onto``),
    then the cost profile, then published reference tables (``--reference``), in their own section: never part
    of a run's statistics."""
    out = ["# specbench leaderboard", ""]
    out.append("Speedup = (method tokens / method time) / (ar tokens / ar time) over the same questions; "
               "±: half width of the 95% paired bootstrap CI over questions. tau = tokens per forward pass.")
    for g in groups:
        out += ["", f"## {html_text(g.title)}", ""]  # (titles and footers hold the runs' names and settings)
        for t in g.tables:
            out += [f"**{html_text(t.title)}**", "", table_md(t), ""]
        for title, found in ((IMPLAUSIBLE_TITLE, implausible_lines(g.stats)), (FLAGS_TITLE, flag_lines(g.stats))):
            if found:
                out += [f"**{html_text(title)}:**", "", *(f"- {html_text(line)}" for line in found), ""]
        out += ["<details><summary>hardware, versions, config, commands</summary>", ""]
        out += [f"- {html_text(line)}" for line in g.footer]
        out += ["", "</details>"]
    if projected:
        out += ["", f"## {PROJECTED_SECTION}", ""]
        out.append("\n\n".join(projected_md(proj) for proj in projected))
    if profile is not None:
        from specbench.profiling.profile import profile_table

        headers, rows = profile_table(profile)
        out += ["", "## Cost profile of this machine", "",
                html_text(f"hardware: {profile.get('hardware')}; model: {profile.get('model')}; "
                          f"context: {profile.get('context_len')} cached tokens"), ""]
        out.append(table_md(Table("", headers, rows, [])))
        for t in profile_tables:
            out += ["", f"**{html_text(t.title)}**", "", table_md(t)]
    if published:
        out += ["", "## Published reference tables (not measured here)", ""]
        for t in published:
            out += [f"**{html_text(t.title)}**", "", table_md(t), ""]
    return "\n".join(out) + "\n"
