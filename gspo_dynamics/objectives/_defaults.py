"""Each objective's defaults, shared by every config that names an objective (the sequence
testbed's `SequenceRLConfig` and the trainer's `TrainConfig`): the clip range of its paper, its
advantage scale, and whether its gradient is taken at the sampling policy."""

from __future__ import annotations

from typing import Mapping

from gspo_dynamics.theory.ratios import GRPO_CLIP, GSPO_CLIP

# (eps_low, eps_high) when none is given: each paper's range. CISPO (MiniMax 2025) sets no lower
# bound (eps_low = 1: the bound 1 - eps_low = 0 is never crossed) and tunes eps_high; DAPO's 0.28
# stands in for it. Objectives not listed use GRPO_CLIP.
OBJECTIVE_CLIPS: Mapping[str, tuple[float, float]] = {
    "gspo": GSPO_CLIP, "gspo_token": GSPO_CLIP, "cispo": (1.0, GRPO_CLIP[1]),
}
STALE_GRADIENT: tuple[str, ...] = ("pg",)  # objectives whose gradient is taken at the sampling policy (no correction)
# objectives whose clipped ratio has one entry per sequence, (B, 1) (TRL's importance_sampling_level="sequence");
# the others' has one per token, (B, L), gspo_token's too (each token carries s_i)
SEQUENCE_LEVEL: tuple[str, ...] = ("gspo",)


class ObjectiveDefaults:
    """The objective's defaults for a config with fields objective, clip_low, clip_high and
    advantage_scale (None: the default); shared by `SequenceRLConfig` and the trainer's config."""

    @property
    def eps_low(self) -> float:
        """clip_low, or the objective's default."""
        return float(OBJECTIVE_CLIPS.get(self.objective, GRPO_CLIP)[0] if self.clip_low is None else self.clip_low)

    @property
    def eps_high(self) -> float:
        """clip_high, or the objective's default."""
        return float(OBJECTIVE_CLIPS.get(self.objective, GRPO_CLIP)[1] if self.clip_high is None else self.clip_high)

    @property
    def scale(self) -> str:
        """advantage_scale, or the objective's default: "none" for dr_grpo (no std), else "group"."""
        if self.advantage_scale is not None:
            return self.advantage_scale
        return "none" if self.objective == "dr_grpo" else "group"
