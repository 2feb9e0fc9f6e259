"""A single self-contained HTML page: sortable tables (inline JS) and plots as PNG data URIs."""
from __future__ import annotations

from typing import Any

from specbench.reports.leaderboard.tables import Group, Table
from specbench.reports.projection_columns import projection_notes, projection_table
from specbench.reports.projection_files import PLOT_ALT, PROJECTED_SECTION
from specbench.reports.projection_table import Projection
from specbench.reports.table import html_escape  # (invisible characters shown too)
from specbench.reports.timing_sections import FLAGS_TITLE, IMPLAUSIBLE_TITLE, flag_lines, implausible_lines

_CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1300px}
table{border-collapse:collapse;margin:8px 0 20px}
th,td{border:1px solid #ccc;padding:4px 10px;text-align:right;white-space:nowrap}
th:first-child,td:first-child,td.text{text-align:left}
th{background:#eef;cursor:pointer;user-select:none}
th.asc::after{content:" \\25B2"} th.desc::after{content:" \\25BC"}
tr:nth-child(even) td{background:#f8f8f8}
td.bad{color:#b00;font-weight:bold}
img.plot{max-width:100%;border:1px solid #ddd;margin:6px 12px 6px 0}
.footer{font-size:12px;color:#555} .footer code{font-size:12px}
"""

# click a header to sort by its column (numeric by data-key, else text); click again to reverse
_JS = """
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, col){
    th.addEventListener('click', function(){
      var desc = !th.classList.contains('desc');
      table.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
      th.classList.add(desc ? 'desc' : 'asc');
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(r){var c=r.cells[col]; var k=c.getAttribute('data-key');
        if(k===null||k===''){return null;} var n=parseFloat(k); return isNaN(n)?k:n;}
      rows.sort(function(a,b){var x=key(a), y=key(b);
        if(x===null&&y===null){return 0;} if(x===null){return 1;} if(y===null){return -1;}
        var c = (x<y)?-1:(x>y)?1:0; return desc?-c:c;});
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
"""


def table_html(t: Table, table_id: str) -> str:
    head = "".join(f"<th>{html_escape(h)}</th>" for h in t.headers)
    body = []
    for row, keys in zip(t.rows, t.keys or [[None] * len(row) for row in t.rows]):
        cells = []
        for cell, key in zip(row, keys):
            k = "" if key is None or (isinstance(key, float) and key != key) else html_escape(str(key))
            # text columns (lossless status, draft shape) read left-aligned; their sort keys are strings
            cls = ' class="bad text"' if cell.startswith("MISMATCH") else (' class="text"' if isinstance(key, str) else "")
            cells.append(f'<td data-key="{k}"{cls}>{html_escape(cell)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<h3>{html_escape(t.title)}</h3>\n<table class="sortable" id="{table_id}">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def projected_html(projs: list[Projection], plot: str | None) -> str:
    """Each run's projected table (every projected cell names its profile) with its notes, then the figure."""
    parts = [f"<h2>{html_escape(PROJECTED_SECTION)}</h2>"]
    for i, proj in enumerate(projs):
        parts.append(table_html(projection_table(proj), f"proj{i}"))
        parts.append('<div class="footer"><ul>' + "".join(
            f"<li>{html_escape(line)}</li>" for line in projection_notes(proj)) + "</ul></div>")
    if plot:
        parts.append(f'<img class="plot" alt="{html_escape(PLOT_ALT)}" src="{plot}">')
    return "\n".join(parts)


def leaderboard_html(
    groups: list[Group],
    plots: list[list[tuple[str, str]]],
    profile_tables: list[Table],
    profile: dict[str, Any] | None,
    profile_plot: str | None,
    published: list[Table] | None = None,
    *,
    projected: tuple[list[Projection], str | None] = ([], None),
) -> str:
    """The page: per group its tables, plots (``(alt, data_uri)`` pairs) and footer; then the runs' projections
    (``--onto``: their tables and figure); then the profile; then published reference tables in their own
    section."""
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>specbench leaderboard</title>",
             f"<style>{_CSS}</style></head><body><h1>specbench leaderboard</h1>",
             "<p>Speedup = (method tokens / method time) / (ar tokens / ar time) over the same questions; "
             "&plusmn;: half width of the 95% paired bootstrap CI over questions. "
             "tau = tokens per forward pass. Click a column header to sort.</p>"]
    for gi, (g, figs) in enumerate(zip(groups, plots)):
        parts.append(f"<h2>{html_escape(g.title)}</h2>")
        for ti, t in enumerate(g.tables):
            parts.append(table_html(t, f"g{gi}t{ti}"))
        for title, found in ((IMPLAUSIBLE_TITLE, implausible_lines(g.stats)), (FLAGS_TITLE, flag_lines(g.stats))):
            if found:
                parts.append(f"<p><b>{html_escape(title)}:</b></p><ul>"
                             + "".join(f"<li>{html_escape(line)}</li>" for line in found) + "</ul>")
        parts.append("<div>" + "".join(
            f'<img class="plot" alt="{html_escape(alt)}" src="{uri}">' for alt, uri in figs) + "</div>")
        parts.append('<div class="footer"><ul>' + "".join(
            f"<li>{html_escape(line)}</li>" for line in g.footer) + "</ul></div>")
    if projected[0]:
        parts.append(projected_html(*projected))
    if profile is not None:
        from specbench.profiling.profile import profile_table

        headers, rows = profile_table(profile)
        parts.append("<h2>Cost profile of this machine</h2>")
        parts.append(f"<p class='footer'>{html_escape(str(profile.get('hardware')))}; context "
                     f"{html_escape(str(profile.get('context_len')))} cached tokens</p>")
        keys = [[float(c) if c.replace('.', '', 1).isdigit() else c for c in r] for r in rows]
        parts.append(table_html(Table("T(n): one forward of n new tokens", headers, rows, keys), "profile"))
        if profile_plot:
            parts.append(f'<img class="plot" alt="profile curve" src="{profile_plot}">')
        for i, t in enumerate(profile_tables):
            parts.append(table_html(t, f"pred{i}"))
    if published:
        parts.append("<h2>Published reference tables (not measured here)</h2>")
        parts += [table_html(t, f"pub{i}") for i, t in enumerate(published)]
    parts.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(parts)
