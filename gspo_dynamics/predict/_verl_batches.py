"""verl's mini-batch against its rollout (`predict._verl`): past the rollout, refused as verl refuses it or, under
dynamic batching, one mini-batch; a mini-batch that does not divide the rollout, said as verl's refusal."""

from __future__ import annotations

from gspo_dynamics._errors import ConfigError


def mini_batch(mini: int, rollout: int, agents: int, dynamic: bool, notes: list[str]) -> int:
    """The mini-batch in prompts: ppo_mini_batch_size, refused past the rollout (train_batch_size x n_agent) as verl
    refuses it, except under use_dynamic_bsz, which verl allows (ActorConfig.validate checks it only without): the
    rollout is then one mini-batch, one optimizer step per epoch, said in `notes`."""
    if mini <= rollout * agents:
        return mini
    if not dynamic:
        raise ConfigError(f"ppo_mini_batch_size ({mini}) exceeds data.train_batch_size ({rollout})"
                          + (f" x n_agent ({agents})" if agents > 1 else "")
                          + ": a minibatch cannot hold more prompts than the rollout (verl refuses it without "
                            "use_dynamic_bsz)")
    notes.append(f"ppo_mini_batch_size {mini} exceeds data.train_batch_size {rollout * agents} under use_dynamic_bsz, "
                 "which verl allows: the rollout is one mini-batch, one optimizer step per epoch")
    return rollout * agents


def ragged(mini: int, rollout: int, exact: float, T: int) -> str:
    """verl 0.9.1's refusal of a mini-batch that does not divide the rollout (engine_workers' make_iterator asserts it;
    releases 0.4-0.7 split off a short last mini-batch)."""
    return (f"verl 0.9.1 refuses this config: its update asserts the rollout splits into whole mini-batches, and "
            f"ppo_mini_batch_size {mini} does not divide data.train_batch_size {rollout} (it stops at the first update; "
            f"verl 0.4-0.7 ran a short last mini-batch); read as T = {exact:g} rounded to {T}")
