"""TRL's generation batch (`predict._frameworks`' TRL mapping reads it): steps_per_generation as
`GRPOConfig.__post_init__` sets it from the generation keys and the global batch, and, where the batch is not whole
groups of G (TRL's refusal), the process count and the least edit that make it whole."""

from __future__ import annotations

import math

from gspo_dynamics._errors import ConfigError


def steps_per_generation(generation: tuple[int | None, int | None], ga: int, global_batch: int,
                              notes: list[str]) -> int:
    """steps_per_generation as `GRPOConfig.__post_init__` sets it (`predict._frameworks`' docstring): given, or from
    generation_batch_size over the global batch (per_device_train_batch_size x devices), else the accumulation."""
    spg, gbs = generation
    if spg is not None and gbs is not None:  # a saved config: __post_init__ filled both in
        if gbs != spg * global_batch:
            raise ConfigError(f"generation_batch_size ({gbs}) is not steps_per_generation x per_device_train_batch_size x "
                              f"devices ({spg} x {global_batch}); TRL refuses a config that sets both (give one, or the "
                              "device count that makes them agree: --devices)")
        return spg
    if gbs is not None:
        if gbs % global_batch:
            raise ConfigError(f"generation_batch_size ({gbs}) must be divisible by per_device_train_batch_size x "
                              f"devices ({global_batch}), as TRL requires")
        notes.append(f"steps_per_generation = generation_batch_size / (per_device_train_batch_size x devices) = "
                     f"{gbs} / {global_batch} = {gbs // global_batch}")
        return gbs // global_batch
    if spg is None:
        notes.append(f"steps_per_generation not given: gradient_accumulation_steps ({ga}), TRL's default")
        return ga
    return spg


def on_one_process(generation: tuple[int | None, int | None], ga: int, batch: int, G: int) -> str:
    """The words that make TRL's refusal (generation batch not whole groups) conditional on the process count this
    reader assumed (1): the least count that makes the batch whole groups where one does (none where the saved
    generation_batch_size fixes the batch whatever the count)."""
    whole = next((d for d in range(1, G + 1) if _whole_groups(generation, ga, batch, d, G)), None)
    more = f"; {whole} processes, or a multiple, hold whole groups" if whole is not None else ""
    return f" on 1 process (the count assumed: --devices N gives yours{more})"


def whole_groups_fix(generation: tuple[int | None, int | None], batch: int, devices: int, spg: int, G: int
                      ) -> tuple[str, int, str]:
    """(key, value, what it buys): the least edit that makes TRL's generation batch whole groups of G, the saved
    generation_batch_size raised to the next multiple of both G and the global batch where the config gives it, else
    per_device_train_batch_size raised to the least b with b x processes x steps_per_generation a multiple of G."""
    if generation[1] is not None and generation[0] is None:
        step = math.lcm(G, batch * devices)
        gbs = step * -(-generation[1] // step)
        return "generation_batch_size", gbs, f"a generation batch of whole groups ({gbs // G} of {G}), as TRL requires"
    b = next(b for b in range(batch + 1, batch + G + 1) if b * devices * spg % G == 0)
    return ("per_device_train_batch_size", b, f"a generation batch of whole groups ({b * devices * spg // G} of {G}: "
            f"{b} x {devices} process{'es' if devices > 1 else ''} x steps_per_generation {spg}), as TRL requires")


def _whole_groups(generation: tuple[int | None, int | None], ga: int, batch: int, d: int, G: int) -> bool:
    """Whether d processes make the generation batch whole groups; False where TRL refuses the config at d (a probe
    of `on_one_process`: its refusal at a count the user never gave is no answer, audit s43py D5)."""
    try:
        return batch * d * steps_per_generation(generation, ga, batch * d, []) % G == 0
    except ConfigError:
        return False
