"""The zero-std share by group size over prompts of mixed difficulty, from the starting model's per-prompt pass rates
(`predict --pass-rates FILE`): the empirical mixture of `theory.zero_std`,

    z(G) = mean_i [p_i^G + (1 - p_i)^G],

and the smallest G (the config's group-size key) whose share is at most a target. z(G) decreases in G for every
p_i (each term does), so the first G of the scan that meets the target is the smallest. In TRL, whose generation
batch must hold whole groups, the change is the G' in [G_min, 2 G_min] (each meets the target) whose batch, scaled by
an integer k to hold whole groups of G' and no fewer prompts than now, is the least (`ConfigKeys.rollout_factor`); the
accumulation and the rollout's size scale by k alike, keeping T."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict._pass_rates import load_pass_rates
from gspo_dynamics.theory.zero_std import zero_std_share_pass_rates

TARGET_ZERO_STD = 0.2  # the default target: four groups in five carry a signal
G_SCAN = tuple(range(2, 257))  # the group sizes scanned for the target
SHOWN = (2, 4, 8, 16, 32, 64)  # the group sizes printed


@dataclass(frozen=True)
class ZeroStdAnswer:
    """The mixture's share by G at the prompts' pass rates, and the G for the target share."""

    prompts: int
    group_size: int  # the config's G
    share: float  # z at the config's G
    by_group: dict[int, float]  # z at SHOWN
    target: float
    group_for_target: int | None  # None: no G up to G_SCAN's end reaches the target
    floor: float  # the share of prompts the model always solves or always fails (pass rate 0 or 1): z's limit
    scan: dict[int, float] = field(default_factory=dict)  # z at every G of G_SCAN: the share at the G a change names

    def settled_lines(self) -> list[str]:
        shown = ", ".join(f"{g}: {v:.2g}" for g, v in self.by_group.items())
        return [f"zero-std groups over the {self.prompts} prompts' pass rates: {self.share:.2g} at G = {self.group_size} "
                f"(by G: {shown}); {self.floor:.0%} of the prompts are always solved or always failed, a share no G removes"]

    def changes(self, setup) -> list:
        """The G for the target, as the config's key, with each edit the framework needs beside it to keep T and
        accept the config (`ConfigKeys.group_edits`), each key saying the others; none where G already meets it."""
        from gspo_dynamics.predict._headline import group_changes

        G = self.group_for_target
        if G is None or G <= self.group_size or self.share <= self.target:
            return []
        keys = getattr(setup, "keys", None)
        if keys is not None and keys.rollout:  # TRL: of G .. 2G, the fewest completions per rollout, whole groups
            G = min(range(G, 2 * G + 1), key=lambda g: (keys.rollout_factor(self.group_size, g), g))
        k = keys.rollout_factor(self.group_size, G) if keys is not None else 1
        buys = (f"zero-std groups {self.share:.0%} -> {self.scan.get(G, self.target):.0%} at these prompts' pass rates"
                + (f"; each step then holds {k}x the completions" if k > 1 else ""))
        return group_changes(keys, self.group_size, G, buys)

    def to_json(self) -> dict:
        return {"prompts": self.prompts, "share": self.share, "by_group": {str(g): v for g, v in self.by_group.items()},
                "target": self.target, "group_for_target": self.group_for_target, "floor": self.floor}


def zero_std_answer(path: str, group_size: int | None, target: float | None = None) -> ZeroStdAnswer:
    """`ZeroStdAnswer` of a pass-rates file at the config's G (module docstring); one ConfigError for a bad file or
    target, or a config without G."""
    target = TARGET_ZERO_STD if target is None else target
    if not 0 < target < 1:
        raise ConfigError(f"--target-zero-std must be a share in (0, 1), got {target!r}")
    if group_size is None:
        raise ConfigError("--pass-rates needs the run's group size G (num_generations, rollout.n or group_size)")
    rates = load_pass_rates(path)
    shares = {G: float(zero_std_share_pass_rates(rates, G)) for G in sorted({*G_SCAN, group_size, *SHOWN})}
    reach = next((G for G in G_SCAN if shares[G] <= target), None)
    return ZeroStdAnswer(prompts=int(rates.size), group_size=group_size, share=shares[group_size],
                         by_group={G: shares[G] for G in SHOWN}, target=target, group_for_target=reach,
                         floor=float(np.mean((rates == 0) | (rates == 1))), scan=shares)
