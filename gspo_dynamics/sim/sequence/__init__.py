"""Synthetic sequence tasks and small policies: where token- and sequence-level ratios differ.

Tasks (verifiable sequence rewards, a difficulty knob, one shared 15-token vocabulary):
    PatternMatch(length, min_matches)   reproduce a target pattern on at least k of L positions
    CountParity(length, min_count)      a token's count is >= c and has a given parity
    Addition(n_digits)                  "^a+b=" -> the digits of a + b, then EOS

Policies (`policy(prompts, tokens, routing=None) -> (logits (B, L, V), routing or None)`):
    TabularPolicy(length, vocab_size)   independent per-position softmax, exact oracles
    TinyTransformer(TransformerConfig)  a tiny causal transformer with a KV cache
    TinyMoETransformer(MoETransformerConfig)   top-k experts; routing replay and counting

    tokens, logp, mask, routing = sample(policy, prompts, max_len, generator, temperature, eos)
    logp_new = log_probs(policy, prompts, tokens, mask, routing)

RL on them (`run_sequence_rl(task, policy, objective="gspo", steps=100) -> SequenceRun`): one
rollout every T optimizer steps, split into T minibatches, any loss of the objectives registry.
"""

from gspo_dynamics.sim.sequence._addition import Addition
from gspo_dynamics.sim.sequence._counting import PARITIES, CountParity, PatternMatch
from gspo_dynamics.sim.sequence._moe import MoETransformerConfig, TinyMoETransformer, routing_changes
from gspo_dynamics.sim.sequence._policy import Routing, SequencePolicy
from gspo_dynamics.objectives import OBJECTIVE_CLIPS  # re-exported: each objective's clip range
from gspo_dynamics.sim.sequence._rl import (
    ROUTING_REPLAYS,
    SequenceRLConfig,
    SequenceRun,
    run_sequence_rl,
)
from gspo_dynamics.sim.sequence._sampling import gather_log_probs, log_probs, sample
from gspo_dynamics.sim.sequence._tabular import TabularPolicy
from gspo_dynamics.sim.sequence._task import SequenceTask, count_distribution
from gspo_dynamics.sim.sequence._transformer import TinyTransformer, TransformerConfig
from gspo_dynamics.sim.sequence._vocab import TOKENIZER, Tokenizer

__all__ = [
    "PARITIES",
    "TOKENIZER",
    "Addition",
    "CountParity",
    "MoETransformerConfig",
    "OBJECTIVE_CLIPS",
    "PatternMatch",
    "ROUTING_REPLAYS",
    "Routing",
    "SequencePolicy",
    "SequenceRLConfig",
    "SequenceRun",
    "SequenceTask",
    "TabularPolicy",
    "TinyMoETransformer",
    "TinyTransformer",
    "Tokenizer",
    "TransformerConfig",
    "count_distribution",
    "gather_log_probs",
    "log_probs",
    "routing_changes",
    "run_sequence_rl",
    "sample",
]
