"""Render leaderboard.html in a real headless Chromium: tables and plots (acceptance histogram and per-position
acceptance included) visible, sorting works, screenshot non-blank.

Needs the Debian ``chromium`` package (``apt-get update && apt-get install -y chromium``); skipped otherwise.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from specbench.reports.leaderboard.build import build_leaderboard
from test_stats import write_fake_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (apt-get update && apt-get install -y chromium)"
)

# After load: record what is visible, then click the "MT-Bench" header twice (ascending sort)
PROBE = """
<script>
window.addEventListener('load', function(){
  var vis = function(e){var r = e.getBoundingClientRect(); return r.width > 50 && r.height > 20;};
  var tables = Array.prototype.filter.call(document.querySelectorAll('table.sortable'), vis).length;
  var shown = Array.prototype.filter.call(document.images, function(i){return i.naturalWidth > 100 && vis(i);});
  var imgs = shown.length + ':' + shown.map(function(i){return i.alt;}).join('|');
  var th = document.querySelector('#g0t0 thead th:nth-child(2)');
  th.click(); th.click();
  var order = Array.prototype.map.call(document.querySelectorAll('#g0t0 tbody tr'),
                                       function(r){return r.cells[0].textContent;}).join(',');
  var probe = document.createElement('pre'); probe.id = 'probe';
  probe.textContent = 'tables=' + tables + ';imgs=' + imgs + ';order=' + order;
  document.body.appendChild(probe);
});
</script>
"""


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("lb")
    run = write_fake_run(tmp / "run", {"pld": 1.5, "rest": 1.8, "slow": 0.7}, mismatch=("slow", "gsm8k", "gsm8k-1"))
    return build_leaderboard([run], tmp / "out", n_boot=100)["html"]


def test_tables_and_plots_visible_and_sortable(page: Path, tmp_path: Path) -> None:
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    res = _chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", probed.as_uri())
    dom = res.stdout
    m = re.search(r'<pre id="probe">tables=(\d+);imgs=(\d+):([^;]*);order=([^<]*)</pre>', dom)
    assert m, f"probe missing; chromium stderr: {res.stderr[-500:]}"
    # main, details, latency/memory, per-position, accepted-length histogram, MT-Bench categories
    assert int(m.group(1)) == 6
    assert int(m.group(2)) == 5  # five decoded, visible plots, among them the two acceptance plots
    assert {"accepted-length histogram", "per-position acceptance"} <= set(m.group(3).split("|"))
    # ascending by MT-Bench speedup: slow (0.7) < ar (1.0) < pld (1.5) < rest (1.8)
    assert m.group(4) == "slow,ar,pld,rest"
    # row count of the main table in the rendered DOM
    table = re.search(r'<table class="sortable" id="g0t0">.*?</table>', dom, re.S).group(0)
    assert table.count("<tr>") == 1 + 4


def test_screenshot_is_not_blank(page: Path, tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    shot = tmp_path / "shot.png"
    res = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1600", "--hide-scrollbars", page.as_uri())
    assert shot.is_file(), res.stderr[-500:]
    img = mpimg.imread(str(shot))[..., :3]  # [H, W, 3] floats in [0, 1]
    assert img.shape[:2] == (1600, 1280)
    non_white = (img < 0.9).any(axis=-1)
    assert non_white.mean() > 0.05  # text, table borders and plots, not an empty page
    coloured = (img.max(axis=-1) - img.min(axis=-1)) > 0.3  # bar colours of the plots
    assert coloured.mean() > 0.005
    assert float(np.std(img)) > 0.05
