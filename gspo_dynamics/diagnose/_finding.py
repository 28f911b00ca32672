"""The result type of `findings`: one `Finding` per problem that a run's logged metrics show directly."""

from __future__ import annotations

from dataclasses import dataclass

from gspo_dynamics._plain import plain as _plain

# In report order when two have the same severity.
FINDINGS: tuple[str, ...] = ("non_finite", "train_inference_mismatch", "grad_norm_spike", "kl_spike", "ratio_spike",
                             "clip_zero_on_policy", "reward_function_divergence", "truncation", "length_growth",
                             "length_collapse", "reference_not_start")
# "invalidates": the run's numbers cannot be trusted as they stand (non-finite values, a large train-inference
# mismatch, most completions truncated); "warning": worth a look, the numbers stand; "note": an explanation of
# something that looks wrong and is not (a clip fraction of 0 on-policy), kept out of the report's first lines.
INVALIDATES, WARNING, NOTE = "invalidates", "warning", "note"
SEVERITIES: tuple[str, ...] = (INVALIDATES, WARNING, NOTE)


@dataclass(frozen=True)
class Finding:
    """One problem found in a run's logged metrics, answer first."""

    name: str  # one of FINDINGS
    severity: str  # one of SEVERITIES
    summary: str  # one line, in the user's units
    evidence: list[dict]  # `_verdict.evidence` items: {"signal", "value", "steps": [first, last], "threshold", ...}
    advice: list[str]  # the fix in TRL's and verl's config keys, with values; or []

    def __post_init__(self) -> None:
        if self.name not in FINDINGS:
            raise ValueError(f"unknown finding {self.name!r}; expected one of {', '.join(FINDINGS)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}; expected one of {', '.join(SEVERITIES)}")

    def to_json(self) -> dict:
        return _plain({"name": self.name, "severity": self.severity, "summary": self.summary,
                       "evidence": self.evidence, "advice": self.advice})


def order(found: list[Finding]) -> list[Finding]:
    """Most severe first; within a severity, in FINDINGS order."""
    return sorted(found, key=lambda f: (SEVERITIES.index(f.severity), FINDINGS.index(f.name)))
