"""The one seam between specbench's core and its plugins: everything a method or a task author imports.

``methods/`` and ``tasks/`` import specbench only from here (``tests/test_layering.py`` checks it), so
the core can move its files without breaking a plugin, and a newcomer reads one page to learn what a
method may use. A method *proposes*; the engine alone runs the target, verifies and accepts.

A method in 15 lines (prompt lookup of one token, for illustration)::

    from dataclasses import dataclass
    from specbench.api import BaseDrafter, DraftContext, DraftTree, MethodEnv, register_method

    @dataclass(frozen=True)
    class EchoConfig:
        n: int = 2  # how many tokens to repeat

    class EchoDrafter(BaseDrafter):
        def __init__(self, n: int) -> None:
            self.n = n

        def propose(self, ctx: DraftContext) -> DraftTree | None:
            # context [.., 7, 8, 9] (9 = the root) -> the chain [8, 9]: guess the text repeats itself
            return DraftTree.chain(ctx.tokens[-self.n:]) if len(ctx.tokens) > self.n else None

    @register_method("echo", EchoConfig)
    def build_echo(config: EchoConfig, env: MethodEnv) -> EchoDrafter:
        return EchoDrafter(config.n)

What a drafter owes the engine (``engine/drafter.py`` states each with what every capability attribute promises
and a worked example):

1. propose only: return None, a ``DraftTree`` or a ``Proposal`` of the target's token ids continuing
   ``ctx.tokens``; the engine alone verifies and accepts;
2. children best-first: every node's children (the root's too) in the drafter's own ranking, best first (by
   count, probability, beam score...): ``budget=auto`` learns acceptance per sibling rank and keeps the best;
3. distinct siblings (a repeat is verified for nothing; a sampled proposal must not repeat one);
4. read-only inputs: never mutate ``ctx`` (``ctx.tokens`` is the generation's own list) nor a ``StepResult``;
5. ``ctx.max_depth`` is a hint, and ``StepResult`` indexes the tree verified (possibly cut), not the one proposed;
6. one sequence per instance: ``begin`` resets every per-sequence state;
7. capabilities declared as attributes, never probed (``reads_hidden_states``, ``feature_layers``,
   ``drafts_with_target``, ``row_topk``, ``observes_plain_steps``, ``keeps_state_across_generations``):
   the engine hands over only what they ask, and a drafter that learns across generations says so;
8. auxiliary rows, sampled draft distributions and an accept cap come in a ``Proposal``.

EchoDrafter keeps them: a chain (trivially best first), a copied slice of the tokens, no state, and it could
declare ``reads_hidden_states = False`` (it never reads them), letting llama.cpp skip the hidden states.

Groups: the drafter contract (what ``propose`` gets and returns); registration; errors and config
helpers; the target and checkpoints (loading, hub ids, hashes); datastores (REST's suffix arrays,
CREST's n-gram store, corpora); training (the shared feature store, recipes, epoch checkpoints and trainer steps); tasks (and the
embedded tokenizer and input-length labels of the long-input tasks).
"""
from __future__ import annotations

# the drafter contract: methods only propose (engine/drafter.py has the glossary)
from specbench.engine.aux_rows import AuxRows
from specbench.engine.drafter import BaseDrafter, DraftContext, Drafter, Proposal, StepResult
from specbench.engine.backends.layer_skip import SkipSet  # a self-drafting method's skipped sub-layers (DraftContext.target_draft)
from specbench.engine.tree import DraftTree
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter  # a method composing another by name (SAMD's auxiliary)

# registration (a plugin module registers on import; ``specbench.plugins.discovery`` imports them)
from specbench.plugins.registry import (DatastoreAction, PluginCommand, register_corpus, register_datastore_action,
                                        register_datastore_builder, register_method, register_task,
                                        register_first_use_build, register_model_requirement, register_task_source,
                                        register_trainer)
from specbench.run.estimate import PendingBuild  # what a method's first-use build check returns

# errors, configuration and argument helpers
from specbench.catalog import MT_BENCH_CATEGORIES, task_label
from specbench.config.context_length import MIN_LENGTH, length_label
from specbench.config.argtypes import int_at_least, positive_float, positive_int
from specbench.config.coerce import from_dict, parse_settings
from specbench.errors import ConfigError, DatastoreError, ModelLoadError, TaskDataError, UserError
from specbench.files.content_hash import ContentMismatch, file_sha256, verify_checkpoint, verify_sha256
from specbench.files.checkpoint_files import checkpoint_errors, read_config, read_tensors
from specbench.files.jsonfile import parse_json, parse_jsonl, strict_json
from specbench.files.stale_tmp import remove_stale_tmp, tmp_sibling
from specbench.paths import resolve_data_dir

# the target, drafters' own copies of weights, checkpoints
from specbench.engine.backends.torch_backends import resolve_backend
from specbench.engine.backends.kv_cache import PreallocatedCache
from specbench.engine.backends.packed_linear import draft_dtype, pack_for_inference
from specbench.models.dtypes import DTYPES
from specbench.models.embedded import embedded_tokenizer
from specbench.models.hub import is_hub_id, resolve_checkpoint
from specbench.models.loading import load_model, stop_token_ids

# a drafter's own model, declared to device profiles (``specbench profile``; projections price it on other machines)
from specbench.profiling.draft_cost import register_draft_cost
from specbench.profiling.draft_probes import DEEPEST as DEEPEST_PROBE
from specbench.profiling.draft_probes import config_shape, distilled_shape, random_distilled_draft

# the trained-drafter kit: draft layers, trees and tree templates several methods share
from specbench.drafting.layers import (PREFILL_ROWS, MLP, Attention, DecoderLayer, DraftCache, LayerShape, RMSNorm,
                                       causal_chunks)
from specbench.drafting.rope import RopeScaling
from specbench.drafting.frequency_vocab import (VOCAB_CHOICES, choose_draft_vocab, frozen_rows, kept_columns,  # FR-Spec
                                                parse_vocab, record_head_rows)
from specbench.drafting.trees import MC_SIM_7B_63, Expand, dynamic_tree, select_best, static_tree

# datastores and corpora
from specbench.datastore.build import (build_lock, build_rest_datastore, cached_rest_datastore, cached_rest_path,
                                       datastore_artifacts, datastore_built, open_rest_datastore, parse_corpora)
from specbench.datastore.contamination import prompt_probes, test_prompts  # keeping benchmark prompts out of stores
from specbench.datastore.corpora import PAIR_LOADERS, iter_pairs, read_gz_jsonl, sharegpt_conversations
from specbench.datastore.ngram_store import DB as NGRAM_STORE_FILE
from specbench.datastore.ngram_store import FORMAT_VERSION as NGRAM_STORE_VERSION
from specbench.datastore.ngram_store import NgramStore, write_ngram_store
from specbench.datastore.suffix_array import TokenDatastore
from specbench.datastore.token_files import DEFAULT_CHUNK_TOKENS, dir_bytes
from specbench.datastore.tokenize_corpus import tokenizer_hash
from specbench.datastore.trie import query_tree

# training: the shared feature store, recipes, trainer steps, checkpoints trained on first use
from specbench.training.checkpoints import default_dir, keyed_dir, load_or_train, trained_default_dir
from specbench.training.distill_data import DEFAULT_CORPORA, DistillData, interleave, sequence_ids
from specbench.training.draft_distill import (DISTILL_META_FILE, DISTILL_RECIPES, DISTILL_S_PER_POSITION,  # a small AR
                                             DISTILL_VOCAB_FILE, DistillConfig, collect_labels, distill_draft,  # draft
                                             distill_refusal, distilled_dir, distilled_draft_folder, draft_ids,
                                             load_distilled, save_draft)
from specbench.training.labelled_sequences import STORE_SEQ_LEN, LabelledSequence, select as select_labelled
from specbench.training.feature_store import FeatureOptions, FeatureStore
from specbench.training.recipes import (FULL, QUICK, RECIPE_NAMES, added_field, check_recipe, eta_minutes,
                                       recipe_prefix)
from specbench.training.resume import EpochState
from specbench.training.steps import optimizer_step, trainable
from specbench.training.trainer_args import TrainerSpec, register_train_command
from specbench.training.draft_vocab import rank_by_count
from specbench.training.windows import choose_vocab, lr_scale, pack_runs, runs, sequence_lengths
from specbench.training.checkpoint_io import VOCAB, read_vocab, read_weights, save_weights
from specbench.training.find_or_train import find_or_train, record_checkpoint

# tasks
from specbench.prompts.task import DEFAULT_SPLIT, Question, Task, encode_prompt
from specbench.plugins.registry import make_task  # a task instance by name (``gsm8k``, ``jsonl:PATH``)

__all__ = [
    "AuxRows", "BaseDrafter", "DraftContext", "Drafter", "Proposal", "StepResult", "SkipSet", "DraftTree", "MethodEnv",
    "build_drafter",
    "DatastoreAction", "PluginCommand", "register_corpus", "register_datastore_action", "register_datastore_builder",
    "register_method", "register_task", "register_task_source", "register_trainer", "register_first_use_build",
    "register_model_requirement",
    "PendingBuild",
    "MT_BENCH_CATEGORIES", "task_label", "MIN_LENGTH", "length_label", "int_at_least", "positive_float", "positive_int", "from_dict", "parse_settings",
    "ConfigError", "DatastoreError", "ModelLoadError", "TaskDataError", "UserError",
    "ContentMismatch", "file_sha256", "verify_checkpoint", "verify_sha256", "parse_json", "parse_jsonl", "strict_json",
    "remove_stale_tmp", "tmp_sibling",
    "checkpoint_errors", "read_config", "read_tensors",
    "resolve_data_dir",
    "resolve_backend", "PreallocatedCache", "draft_dtype", "pack_for_inference", "DTYPES", "is_hub_id",
    "resolve_checkpoint", "load_model", "stop_token_ids", "embedded_tokenizer",
    "register_draft_cost", "DEEPEST_PROBE", "config_shape", "distilled_shape", "random_distilled_draft",
    "PREFILL_ROWS", "MLP", "Attention", "DecoderLayer", "DraftCache", "LayerShape", "RMSNorm", "causal_chunks",
    "RopeScaling", "MC_SIM_7B_63",
    "VOCAB_CHOICES", "choose_draft_vocab", "frozen_rows", "kept_columns", "parse_vocab", "record_head_rows",
    "Expand", "dynamic_tree", "select_best", "static_tree",
    "build_lock", "build_rest_datastore", "cached_rest_datastore", "cached_rest_path", "datastore_built", "parse_corpora",
    "datastore_artifacts", "open_rest_datastore", "PAIR_LOADERS", "iter_pairs",
    "read_gz_jsonl", "sharegpt_conversations", "prompt_probes", "test_prompts", "NGRAM_STORE_FILE",
    "NGRAM_STORE_VERSION", "NgramStore", "write_ngram_store", "TokenDatastore",
    "DEFAULT_CHUNK_TOKENS", "dir_bytes", "tokenizer_hash", "query_tree",
    "default_dir", "keyed_dir", "trained_default_dir", "load_or_train", "DEFAULT_CORPORA", "DistillData", "interleave",
    "sequence_ids", "DISTILL_META_FILE", "DISTILL_RECIPES", "DISTILL_S_PER_POSITION", "DISTILL_VOCAB_FILE",
    "DistillConfig", "collect_labels", "distill_draft", "distill_refusal", "draft_ids", "distilled_dir", "distilled_draft_folder", "load_distilled", "save_draft", "STORE_SEQ_LEN",
    "LabelledSequence", "select_labelled", "FeatureOptions", "FeatureStore", "FULL", "QUICK", "RECIPE_NAMES", "recipe_prefix", "check_recipe",
    "eta_minutes", "added_field", "EpochState", "optimizer_step", "trainable", "TrainerSpec", "register_train_command",
    "choose_vocab", "rank_by_count", "lr_scale", "pack_runs", "runs", "sequence_lengths", "VOCAB", "read_vocab",
    "read_weights",
    "save_weights", "find_or_train", "record_checkpoint",
    "Question", "Task", "encode_prompt", "DEFAULT_SPLIT", "make_task",
]
