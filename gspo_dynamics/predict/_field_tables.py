"""What the field tables of `predict._trl_fields`, `_verl_fields` and `_openrlhf_fields` say about one config."""

from __future__ import annotations

from typing import Any

from gspo_dynamics._errors import ConfigError

# what a sampling temperature other than 1 changes, in every framework's table of keys the model does not represent
TEMPERATURE = ("samples at this temperature: a group's spread is the tempered policy's; near 0 its responses are alike "
               "and the group's advantage vanishes")
# LoRA, as each framework names it (TRL's use_peft, verl's model.lora_rank, OpenRLHF's lora_rank): every step changes
LORA = "trains LoRA adapters: a low-rank update, whose lr scale differs from full fine-tuning's (the lr read is the adapters')"
LORA_SCALE = "the LoRA update's scale lora_alpha / rank: an lr multiplier"
LORA_WEIGHTS = "which weights the adapters train"



NEAR_GREEDY = 0.01  # a temperature or top_p below this samples all but greedily (`sampling_check`); stated, not fitted


def sampling_check(values: dict[str, Any]) -> None:
    """Refuse a sampler that cannot give a group two different responses: a temperature or top_p of 0 or less (given
    as a number: {key as written: value}) samples greedily, so every group's responses are alike, every group-relative
    advantage is 0 and no step learns; as num_generations 1 is refused. Below NEAR_GREEDY it does so all but exactly:
    at temperature t a token whose logit trails the top one by d is drawn exp(-d / t) as often (a near tie of 0.05 nats
    under 1% as often at t 0.01, e^-500 at 1e-4), and a top_p under 0.01 keeps the top token alone unless it holds
    under 1% of the mass (audit s39c: an OpenRLHF run at temperature 1e-4 was read as any other)."""
    for key, value in values.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value >= NEAR_GREEDY:
            continue
        how = "samples greedily" if value <= 0 else f"samples all but greedily (under {NEAR_GREEDY:g})"
        raise ConfigError(f"{key} {value:g} {how}: every group's responses are then alike, every group-relative "
                          f"advantage 0 and no step learns; set {key} >= {NEAR_GREEDY:g} (1.0 samples the policy "
                          "itself)")


# an UNMODELLED table: key -> (neutral values, what it changes, the key it acts through: "key" on, "key=value", or None)
Table = dict[str, tuple[tuple[Any, ...], str, "str | None"]]


def abbreviation_of(name: str, names, given) -> str | None:
    """The one name of `names` that `name` begins, where `name` is none of them and the config does not give that
    one too (`given`), as argparse reads an abbreviated option (allow_abbrev); else None."""
    if name in names:
        return None
    whole = [known for known in names if known.startswith(name)]
    return whole[0] if len(whole) == 1 and whole[0] not in given else None

def active_unmodelled(values: dict[str, Any], table: Table) -> list[tuple[str, Any, str]]:
    """(key, value, what it changes) for each key of `table` set away from its neutral values (a key without neutral
    values: wherever the key it acts through is on), where that key is on."""
    return [(key, values[key], what) for key, (neutral, what, requires) in table.items()
            if key in values and not (neutral and _neutral(values[key], neutral)) and _acts(values, requires)
            and (neutral or requires is not None)]


def _neutral(value: Any, neutral: tuple[Any, ...]) -> bool:
    return any(value == n and type(value) is not bool or value is n for n in neutral)


def _acts(values: dict[str, Any], requires: str | None) -> bool:
    if requires is None:
        return True
    key, sep, value = requires.partition("=")
    return values.get(key) == value if sep else bool(values.get(key))


def grouped(active: list[tuple[str, Any, str]]) -> str:
    """One note naming each active unmodelled key with its value and what it changes."""
    return "not modelled (each changes the dynamics): " + "; ".join(f"{k} = {v!r}: {what}" for k, v, what in active)
