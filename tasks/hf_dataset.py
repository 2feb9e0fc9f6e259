"""``--tasks hf:DATASET[:CONFIG]:SPLIT:FIELD``: prompts from a Hugging Face dataset via ``datasets``.

DATASET is a hub id (``openai/gsm8k``) or a folder written by ``Dataset.save_to_disk`` /
``DatasetDict.save_to_disk``; FIELD is the column holding the prompt (a string, or a list of strings
for several turns). An ``id`` or ``question_id`` column gives the question ids (else the row number),
a ``category`` column the report columns. ``trust_remote_code`` stays off: datasets that need their own
loading script are refused by ``datasets`` itself.

    hf:openai/gsm8k:main:test:question     (hub: config main, split test, column question)
    hf:./my_prompts:train:prompt           (a save_to_disk folder, no config)

``--split`` (eval/dev/all) then applies to the rows as to every task: the last ceil(10%) (none below 10 rows)
are the dev split; it is independent of the dataset's own SPLIT.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.api import Question, TaskDataError, register_task_source
from specbench_tasks._source_task import SourceTask

ID_COLUMNS = ("id", "question_id")


@dataclass(frozen=True)
class HFSpec:
    """The parts of ``DATASET[:CONFIG]:SPLIT:FIELD``.

    >>> HFSpec.parse("openai/gsm8k:main:test:question")
    HFSpec(dataset='openai/gsm8k', config='main', split='test', field='question')
    >>> HFSpec.parse("./saved:train:prompt").config is None
    True
    """

    dataset: str
    config: str | None
    split: str
    field: str

    @classmethod
    def parse(cls, spec: str) -> "HFSpec":
        parts = spec.split(":")
        if len(parts) not in (3, 4) or not all(p.strip() for p in parts):
            raise TaskDataError(f"--tasks hf:{spec}: expected hf:DATASET[:CONFIG]:SPLIT:FIELD, "
                                "e.g. hf:openai/gsm8k:main:test:question")
        if len(parts) == 3:
            return cls(parts[0], None, parts[1], parts[2])
        return cls(*parts)


def is_saved_dataset(path: Path) -> bool:
    return path.is_dir() and any((path / f).is_file() for f in ("dataset_dict.json", "state.json", "dataset_info.json"))


def load_split(spec: HFSpec) -> Any:
    """The ``datasets.Dataset`` of the split: from a save_to_disk folder when DATASET is one, else the hub."""
    import datasets

    local = Path(spec.dataset).expanduser()
    if is_saved_dataset(local):
        if spec.config is not None:
            raise TaskDataError(f"{local}: a saved dataset has no configs; use hf:{spec.dataset}:SPLIT:FIELD")
        try:
            ds = datasets.load_from_disk(str(local))
        except (FileNotFoundError, ValueError, OSError) as e:
            raise TaskDataError(f"{local}: not a readable saved dataset ({type(e).__name__}: {e})") from None
        if isinstance(ds, datasets.DatasetDict):
            if spec.split not in ds:
                raise TaskDataError(f"{local}: no split {spec.split!r} (has: {', '.join(ds)})")
            return ds[spec.split]
        if ds.split is not None and str(ds.split) != spec.split:
            raise TaskDataError(f"{local}: holds split {ds.split!s}, not {spec.split!r}")
        return ds
    if local.exists() or spec.dataset.startswith((".", "/", "~")):
        raise TaskDataError(f"{local}: not a dataset folder written by save_to_disk")
    try:
        return datasets.load_dataset(spec.dataset, spec.config, split=spec.split)
    except Exception as e:  # hub errors come in many types; the user needs the one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise TaskDataError(f"hf:{spec.dataset}: cannot load split {spec.split!r} ({type(e).__name__}: {first})") from None


def _turns(where: str, row: int, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) and value.strip():
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TaskDataError(f"{where} row {row}: the field must be a non-empty string or list of strings, got {value!r:.60}")


def dataset_questions(ds: Any, spec: HFSpec, task: str) -> list[Question]:
    """Questions of the dataset's rows in order (one-line errors name the row)."""
    where = f"hf:{spec.dataset}:{spec.split}"
    if spec.field not in ds.column_names:
        raise TaskDataError(f"{where}: no column {spec.field!r} (has: {', '.join(ds.column_names)})")
    id_col = next((c for c in ID_COLUMNS if c in ds.column_names), None)
    has_category = "category" in ds.column_names
    out, seen = [], set()
    for i, row in enumerate(ds):
        qid = str(row[id_col]) if id_col else str(i)
        if qid in seen:
            raise TaskDataError(f"{where} row {i}: duplicate {id_col} {qid!r}")
        seen.add(qid)
        category = row["category"] if has_category and isinstance(row["category"], str) else ""
        out.append(Question(qid, task, _turns(where, i, row[spec.field]), category))
    if not out:
        raise TaskDataError(f"{where}: no rows")
    return out


@register_task_source("hf")
def hf_task(spec_text: str) -> SourceTask:
    """hf:DATASET[:CONFIG]:SPLIT:FIELD  prompts from a dataset column (hub id or save_to_disk folder)."""
    spec = HFSpec.parse(spec_text)
    name = f"hf:{spec_text}"
    label = Path(spec.dataset).name or spec.dataset
    return SourceTask(name, f"{label}/{spec.split}", dataset_questions(load_split(spec), spec, name))
