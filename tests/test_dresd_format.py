"""DReSD OOD key format: ``chat`` entries hold the benchmark's own context form; ``qa`` the reference's."""
from __future__ import annotations

from pathlib import Path

import pytest

from specbench_methods.dresd.config import DReSDConfig
from specbench_methods.dresd.datastore.build import BuildSettings, encode_pair
from specbench.errors import ConfigError


@pytest.mark.embedded
def test_chat_entry_is_the_benchmark_context_form(embedded) -> None:
    from specbench.prompts.task import encode_prompt

    tok = embedded.tokenizer
    chat = encode_pair(tok, "Add 2 and 3.", "The sum is 5.", "chat")
    head = encode_prompt(tok, [{"role": "user", "content": "Add 2 and 3."}])
    assert chat[: len(head)] == head and len(chat) > len(head)
    assert tok.decode(chat[len(head):]) == "The sum is 5."
    qa = encode_pair(tok, "Add 2 and 3.", "The sum is 5.", "qa")
    assert tok.decode(qa).startswith("Question: Add 2 and 3.\nAnswer:\n") and qa != chat
    assert encode_pair(tok, "", "def f(): pass", "chat") == encode_pair(tok, "", "def f(): pass", "qa")


def test_format_options_validated_and_cached_apart(monkeypatch) -> None:
    from types import SimpleNamespace

    import specbench_methods.dresd.datastore.fingerprint as fingerprint
    from specbench_methods.dresd import method

    with pytest.raises(ConfigError, match="text_format"):
        BuildSettings(text_format="plain").validate()
    with pytest.raises(ConfigError, match="text_format"):
        DReSDConfig(text_format="plain").validate()
    env = SimpleNamespace(cache_dir="/c", model=None)
    monkeypatch.setattr(fingerprint, "model_fingerprint", lambda model: "fp")
    chat = method.default_datastore_path(DReSDConfig(), env, "gsm8k_train")
    qa = method.default_datastore_path(DReSDConfig(text_format="qa"), env, "gsm8k_train")
    ident = method.default_datastore_path(DReSDConfig(id=True), env, "gsm8k_train")
    assert chat == Path("/c/datastores/dresd/gsm8k_train-ood-chat-20000-fp")
    assert qa == Path("/c/datastores/dresd/gsm8k_train-ood-20000-fp")  # the key qa builds had before the option
    assert ident == Path("/c/datastores/dresd/gsm8k_train-id-20000-fp")
