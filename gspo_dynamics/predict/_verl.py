"""verl's PPO trainer config (its YAML, with a run script's key=value overrides) mapped onto the theory's
hyperparameters, behind `read_run_config`.

With a group estimator (algorithm.adv_estimator grpo, ...) a rollout of data.train_batch_size prompts x rollout.n
responses is cut into minibatches of ppo_mini_batch_size prompts, each an optimizer step, and passed over ppo_epochs
times:

    T = ppo_epochs x train_batch_size / ppo_mini_batch_size,   N = ppo_mini_batch_size,   G = rollout.n
    (verl 0.9.1 asserts ppo_mini_batch_size divides train_batch_size: a T that is no integer is said as its refusal)
    lr = actor.optim.lr, (eps_low, eps_high) = (clip_ratio_low, clip_ratio_high), 0.2 each where unset from verl
    0.4 on (its YAML sets them; clip_ratio is the loss's fallback for a null one), clip_ratio each before 0.4,
    beta = kl_loss_coef when use_kl_loss, correction = sequence for policy_loss.loss_mode gspo, else token,
    the dual clip c = clip_ratio_c under loss_mode vanilla

verl 0.9.1's estimators and losses are its registered names (`predict._verl_fields`); the optimizer and schedule are
`predict._optimizers`'.

Search-R1 (PeterGriffinJin/Search-R1, a fork of verl 0.1; MEM1 and other agent RL repos descend from it) gives the
group as `actor_rollout_ref.rollout.n_agent`. Its trainer (`verl/trainer/ppo/ray_trainer.py`, `fit`, read at commit
a14dc3a) repeats each prompt n_agent times before the rollout and draws rollout.n responses (its default 1) for each
copy; under do_search (its default) a row's uid, the key GRPO groups by, is the prompt's index, so the n_agent x n
rows of a prompt are one group (though its multi-turn loop, `search_r1/llm_agent`, asserts one response per copy:
rollout.n > 1 there stops the run, said as a refusal); with do_search false each copy is given its own uid, a group
of n. Its workers scale
ppo_mini_batch_size by rollout.n alone (`verl/workers/fsdp_workers.py`), so a mini-batch holds ppo_mini_batch_size x n
of the rollout's train_batch_size x n_agent x n rows (`search_r1_group`):

    G = n_agent x n (do_search) or n,   T = ppo_epochs x train_batch_size x n_agent / ppo_mini_batch_size,
    N = ppo_mini_batch_size x n / G

A config of its lineage (n_agent, or a key of its own), or of verl before 0.4 (a key its later releases removed), is
read on that trainer where it differs from verl 0.9.1's on a key the mapping reads (`early_verl`): its policy loss
has no dual clip (clip_ratio_c, new in 0.4.0, read only where given), its trainer puts the KL in the reward wherever
use_kl_loss is false (`apply_kl_penalty`, said, not modelled), and its entropy_coeff defaults to 0.001
(`predict._configs`).
"""

from __future__ import annotations

import os
import re
from typing import Any

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict._clip_modes import clip_mode, no_lower_clip
from gspo_dynamics.predict._field_tables import sampling_check
from gspo_dynamics.predict._frameworks import _groups_per_step, _number, _rounded_refresh
from gspo_dynamics.predict._optimizers import verl_optimizer
from gspo_dynamics.predict._verl_batches import mini_batch, ragged
from gspo_dynamics.predict._verl_history import OLD_KEYS
from gspo_dynamics.predict._verl_fields import ACTOR, GROUP_ESTIMATORS, OTHER_ESTIMATORS, ROLLOUT, SEARCH_R1_OWN
from gspo_dynamics.theory.hyperparams import Hyperparams


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= flatten(value, name + ".")
        else:
            out[name] = value
    return out


# OmegaConf interpolations as verl's YAMLs write them: ${a.b.c} (absolute), ${.sibling} / ${..uncle} (relative),
# ${oc.select:a.b.c,default} (the path's value, else the default), ${oc.env:NAME,default} (the variable, else the default)
_REFERENCE = re.compile(r"^\$\{(\.*)([A-Za-z0-9_.]+)\}$")
_SELECT = re.compile(r"^\$\{oc\.select:\s*([A-Za-z0-9_.]+)\s*(?:,(.*))?\}$", re.S)
_ENV = re.compile(r"^\$\{oc\.env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:,(.*))?\}$", re.S)
_NUMERIC = re.compile(r"^\s*[-+]?(?:\d[\d_]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)\s*$")


def interpolated(value: Any) -> bool:
    """Whether `value` is an interpolation left unresolved."""
    return isinstance(value, str) and "${" in value


def _scalar(text: str | None) -> Any:
    """An interpolation's default or an environment variable's text, read as YAML (`8` -> 8, `null` -> None)."""
    import yaml

    from gspo_dynamics._config_file import yaml_loader

    if text is None:
        return None
    try:
        return yaml.load(text.strip(), Loader=yaml_loader())
    except yaml.YAMLError:
        return text.strip()


def _numeric(value: Any) -> Any:
    """A numeric string read as its number, as OmegaConf's typed schema converts it ("2" -> 2, "1e-6" -> 1e-06)."""
    if isinstance(value, str) and _NUMERIC.match(value):
        text = value.strip().replace("_", "")
        try:
            return int(text)
        except ValueError:
            return float(text)
    return value


def _resolved(flat: dict[str, Any], key: str) -> Any:
    """`key`'s value with its interpolations followed (a few levels); the interpolation's text where one is left
    that cannot be resolved (a missing path with no default, an unset variable with none, a computed one)."""
    value, seen = flat.get(key), {key}
    for _ in range(8):
        if not (isinstance(value, str) and value.startswith("${")):
            break
        if m := _REFERENCE.match(value):
            dots, path = m.groups()
            if dots:  # relative: one dot a sibling, each further dot one level up
                parts = key.split(".")
                path = ".".join(parts[: len(parts) - len(dots)] + [path])
            if path not in flat:
                return value
            key, value = path, flat[path]
            seen.add(key)
        elif m := _SELECT.match(value):
            if m.group(1) not in flat or m.group(1) in seen:  # absent, or a key selecting itself: the default
                return _scalar(m.group(2))
            key, value = m.group(1), flat[m.group(1)]
            seen.add(key)
        elif m := _ENV.match(value):
            if m.group(1) in os.environ:
                return _scalar(os.environ[m.group(1)])
            if m.group(2) is None:
                return value
            return _scalar(m.group(2))
        else:
            return value
    return value


def resolve_all(flat: dict[str, Any]) -> dict[str, Any]:
    """A flattened config (`flatten`) with every interpolation resolved where it can be (`_resolved`) and every
    numeric string read as its number; an interpolation that cannot be resolved stays as its text, refused where
    the mapping reads it (`verl_mapping`)."""
    return {key: _numeric(_resolved(flat, key)) for key in flat}


def unresolved(key: str, raw: Any) -> ConfigError:
    """The one error for a key the mapping reads whose interpolation cannot be resolved."""
    return ConfigError(f"{key}: {raw!r} is an interpolation this reader cannot resolve (a launch script's variable the "
                       "script does not set, as the caller's shell is not read; a path not in the config; or an unset "
                       f"environment variable with no default): give its value with --set {key}=VALUE")


def early_verl(flat: dict[str, Any]) -> str | None:
    """Whose trainer a config before verl 0.4 ran, or None: Search-R1's (a verl 0.1 fork) where it gives rollout.n_agent
    or a key of Search-R1's own (`_verl_fields.SEARCH_R1_OWN`, its state_masking, no_think_rl, do_search); verl's own
    before 0.4 where it holds a key whose last release was before 0.4 (`_verl_history.OLD_KEYS`: verl 0.1's
    fsdp_config.grad_offload, which TinyZero and Logic-RL still pass). Before 0.4 verl's policy loss had no dual clip,
    its trainer put the KL in the reward wherever use_kl_loss was false, and its entropy_coeff defaulted to 0.001."""
    marks = SEARCH_R1_OWN | {ROLLOUT + "n_agent", "do_search", ACTOR + "state_masking", "algorithm.no_think_rl"}
    if any(key in marks for key in flat):
        return "Search-R1's trainer (verl 0.1's)"
    old = sorted(key for key in flat if key in OLD_KEYS and OLD_KEYS[key].startswith(("0.1", "0.2", "0.3")))
    return f"verl <= {OLD_KEYS[old[0]]}'s trainer (the config's {old[0]})" if old else None


def search_r1_group(flat: dict[str, Any]) -> tuple[int, str]:
    """(the copies of each prompt in a rollout, the key a user edits for G): Search-R1's rollout.n_agent where the
    config gives it (module docstring; its group under do_search), else verl's (1, rollout.n). `flat`: resolved."""
    agents = flat.get(ROLLOUT + "n_agent")
    if agents is None:
        return 1, ROLLOUT + "n"
    agents = _number(ROLLOUT + "n_agent", agents, integer=True, positive=True)
    return agents, ROLLOUT + ("n_agent" if flat.get("do_search") in (None, True) else "n")


def verl_mapping(flat: dict[str, Any], notes: list[str],
                 said: list[str] | None = None,
                 refused: list[str] | None = None) -> tuple[Hyperparams, float, set[str], str]:
    """verl's mapping of a flattened config (`flatten`): (hyperparameters, T before rounding, the keys read, the loss
    as the config names it: its policy_loss.loss_mode and loss_agg_mode, interpolations followed, verl's defaults
    where unset). `said`: gets the line that says a group read by Search-R1's convention (module docstring);
    `refused`: the line saying what Search-R1 itself stops on (rollout.n > 1 under do_search)."""
    used: set[str] = set()

    raw = flat
    flat = resolve_all(flat)

    def get(key: str, default: Any = None, *, required: bool = False, whose: str = "verl's"):
        value = flat.get(key)
        if interpolated(value):
            raise unresolved(key, raw[key])
        used.add(key)
        if value is None:
            if required and key == ROLLOUT + "n":
                raise ConfigError(f"the verl config leaves {key} unset, whose default in verl is 1: one response per "
                                  "prompt, no group for a group-relative advantage to compare (every advantage 0); give "
                                  "the run's value (G, the responses per prompt; Search-R1 and its forks give it as "
                                  "actor_rollout_ref.rollout.n_agent)")
            if required:
                raise ConfigError(f"the verl config needs {key}")
            if default is not None:
                notes.append(f"{key} not given: {whose} default {default!r}")
            return default
        return value

    estimator = _verl_estimator(get("algorithm.adv_estimator"))
    actor = ACTOR
    agents, group_key = search_r1_group(flat)
    if agents == 1 and ROLLOUT + "n_agent" not in flat:  # verl's own: G = rollout.n
        G = n = _number(ROLLOUT + "n", get(ROLLOUT + "n", required=True), integer=True, positive=True)
    else:  # Search-R1's: rollout.n responses to each of n_agent copies (module docstring)
        get(ROLLOUT + "n_agent")
        n = _number(ROLLOUT + "n", get(ROLLOUT + "n", 1, whose="Search-R1's"), integer=True, positive=True)
        get("do_search")
        G = agents * n if group_key.endswith("n_agent") else n
    if G < 2:
        raise ConfigError(f"{group_key} must be >= 2 for group-relative advantages, got {G}")
    sampling_check({ROLLOUT + key: flat.get(ROLLOUT + key) for key in ("temperature", "top_p")})
    rollout = _number("data.train_batch_size", get("data.train_batch_size", required=True), integer=True, positive=True)
    mini = _number(actor + "ppo_mini_batch_size", get(actor + "ppo_mini_batch_size", required=True), integer=True, positive=True)
    mini = mini_batch(mini, rollout, agents, bool(get(actor + "use_dynamic_bsz", False)), notes)
    epochs = _number(actor + "ppo_epochs", get(actor + "ppo_epochs", 1), integer=True, positive=True)
    exact = epochs * rollout * agents / mini
    copies = (" x n_agent", f" x {agents}") if ROLLOUT + "n_agent" in flat else ("", "")
    formula = (f"ppo_epochs x train_batch_size{copies[0]} / ppo_mini_batch_size = {epochs} x {rollout}{copies[1]} / "
               f"{mini}")
    T = _rounded_refresh(exact, notes, formula)
    early = early_verl(flat)  # a config of a trainer before verl 0.4: its mini-batch, clip and KL rules
    if (rollout * agents) % mini and not early and refused is not None:
        refused.append(ragged(mini, rollout, exact, T))
    groups = mini
    if ROLLOUT + "n_agent" in flat:
        groups = _search_r1_groups((agents, n, G, group_key), mini, f"T = {formula} = {exact:g}", notes,
                                   said if said is not None else notes, refused if refused is not None else notes)
    low, high = _verl_clip(flat, get, used, early, said if said is not None else notes)
    low = no_lower_clip(actor + "clip_ratio_low", low, notes)
    use_kl = bool(get(actor + "use_kl_loss", False))
    beta = _number(actor + "kl_loss_coef", get(actor + "kl_loss_coef", 0.001), nonnegative=True) if use_kl else 0.0
    mode = get(actor + "policy_loss.loss_mode", "vanilla")
    aggregation = get(actor + "loss_agg_mode") or "token-mean"  # verl's default, unsaid: it scales the step only
    correction, clip = _verl_loss(mode, aggregation, get, notes, said if said is not None else notes)
    cap = _reward_kl_and_dual_clip(flat, get, mode, use_kl, notes, early)
    optim = actor + "optim."
    override = {k.rsplit(".", 1)[1]: v for k, v in flat.items() if k.startswith(optim + "override_optimizer_config.")}
    used |= {optim + "override_optimizer_config." + k for k in override}
    optimizer = verl_optimizer(get(optim + "optimizer", "AdamW"), get(optim + "betas", [0.9, 0.999]), override,
                               _number, notes)
    hp = Hyperparams(lr=_number(optim + "lr", get(optim + "lr", 1e-6), positive=True), optimizer=optimizer,
                     refresh_interval=T, group_size=G, num_groups=groups,
                     advantage=_verl_advantage(estimator, get("algorithm.norm_adv_by_std_in_grpo", True), notes),
                     correction=correction, clip_low=low, clip_high=high, kl_coef=beta, clip_mode=clip, ratio_cap=cap)
    return hp, exact, used, f"{mode} ({aggregation})"


def _reward_kl_and_dual_clip(flat: dict[str, Any], get, mode: str, use_kl: bool, notes: list[str],
                             early: str | None) -> float | None:
    """The dual clip c (None: none), with the in-reward KL said: verl 0.9.1's under use_kl_in_reward and c =
    clip_ratio_c (3) under loss_mode vanilla; before verl 0.4 (`early`, `early_verl`'s) an in-reward KL wherever
    use_kl_loss is false and no dual clip unless clip_ratio_c is given (it came in 0.4.0)."""
    if get("algorithm.use_kl_in_reward", False):
        notes.append("algorithm.use_kl_in_reward: a KL penalty in the reward, not modelled (beta from kl_loss_coef only)")
    elif early and not use_kl:  # verl < 0.4's trainer: the in-reward KL wherever the loss has none
        notes.append(f"{early} puts a KL penalty in the reward where use_kl_loss is false (algorithm.kl_ctrl.kl_coef, "
                     "0.001 by default): not modelled")
    if mode != "vanilla":
        return None
    if early and flat.get(ACTOR + "clip_ratio_c") is None:  # verl < 0.4's loss: no dual clip
        notes.append(f"no dual clip: {early} has none (it came in verl 0.4.0; 0.9.1's clip_ratio_c 3 is not its "
                     "default)")
        return None
    return _number(ACTOR + "clip_ratio_c", get(ACTOR + "clip_ratio_c", 3.0), positive=True)  # verl asserts c > 1


def _search_r1_groups(group: tuple[int, int, int, str], mini: int, refresh: str, notes: list[str], said: list[str],
                      refused: list[str]) -> int:
    """N, the groups per optimizer step of a Search-R1 config (`group` = (n_agent, rollout.n, G, the key for G);
    its mini-batch holds ppo_mini_batch_size x rollout.n responses), with the line that says how G, T (`refresh`)
    and N were read into `said`, and Search-R1's own refusal of rollout.n > 1 under do_search into `refused`."""
    agents, n, G, group_key = group
    groups = _groups_per_step(mini * n, G, notes, "ppo_mini_batch_size x rollout.n")
    times = "" if n == 1 else f" x rollout.n {n}"
    source = (f"rollout.n_agent{times} (Search-R1's group size: a prompt's n_agent copies are one group)"
              if group_key.endswith("n_agent") else
              f"rollout.n (do_search false: Search-R1 groups each of a prompt's n_agent = {agents} copies apart)")
    said.append(f"G = {G} from {source}; its mini-batch counts ppo_mini_batch_size x rollout.n = {mini * n} responses: "
                f"{refresh}, N = {mini * n / G:g} groups per step")
    if n > 1 and group_key.endswith("n_agent"):  # search_r1/llm_agent/tensor_helper.py, _example_level_pad
        refused.append(f"Search-R1 refuses this config: under do_search its multi-turn loop takes one response per "
                       f"prompt copy (an assert in its llm_agent), so rollout.n = {n} stops the run at its first turn; "
                       f"read as its grouping would form it, G = n_agent x n = {G}")
    return groups


def _verl_estimator(estimator: Any) -> str:
    """algorithm.adv_estimator, one of verl 0.9.1's group estimators, or one ConfigError naming what it is (unset:
    verl's default gae, said as a default, not as a value the user wrote)."""
    if estimator is None:
        raise ConfigError(f"algorithm.adv_estimator not given: verl's default is gae, {OTHER_ESTIMATORS['gae']}, not a "
                          "group-relative advantage; set algorithm.adv_estimator=grpo")
    if isinstance(estimator, str) and estimator in GROUP_ESTIMATORS:
        return estimator
    if isinstance(estimator, str) and estimator in OTHER_ESTIMATORS:
        raise ConfigError(f"algorithm.adv_estimator {estimator}: {OTHER_ESTIMATORS[estimator]}, not a group-relative "
                          f"advantage; the theory covers verl's group estimators ({', '.join(sorted(GROUP_ESTIMATORS))})")
    hint = (" (Dr. GRPO in verl is adv_estimator grpo with algorithm.norm_adv_by_std_in_grpo=false and "
            "loss_agg_mode seq-mean-token-sum-norm)" if estimator == "drgrpo" else "")
    raise ConfigError(f"algorithm.adv_estimator {estimator!r} is not an estimator of verl 0.9.1 "
                      f"({', '.join(sorted(GROUP_ESTIMATORS | set(OTHER_ESTIMATORS)))}){hint}")


def _verl_advantage(estimator: str, by_std: Any, notes: list[str]) -> str:
    """The group's std divides the advantage under grpo / grpo_vectorized / gdpo with norm_adv_by_std_in_grpo; the
    other group estimators centre it (rloo's leave-one-out mean; opo's, gpg's and pass@k's baselines, said)."""
    if estimator in ("grpo", "grpo_vectorized", "gdpo"):
        return "std" if by_std else "mean"
    if estimator not in ("rloo", "rloo_vectorized"):
        notes.append(f"algorithm.adv_estimator {estimator}: a group baseline, read as the mean-centred advantage")
    return "mean"


def _shown(side, clip: float) -> str:
    """A clip side as read: its value, or clip_ratio's where it is null (the loss's fallback)."""
    return f"{clip if side is None else float(side):g}"


def _verl_clip(flat: dict[str, Any], get, used: set[str], early: str | None, said: list[str]) -> tuple[float, float]:
    """(eps_low, eps_high): clip_ratio_low / clip_ratio_high, each else clip_ratio, the loss's fallback for one that is
    null. verl's YAML sets both to 0.2 from 0.4 on (checked on its release tags), so there a clip_ratio alone moves no
    clip: read as verl runs it, said (`said`); before 0.4 (`early`, `early_verl`) clip_ratio was the clip."""
    actor = ACTOR
    low, high = flat.get(actor + "clip_ratio_low"), flat.get(actor + "clip_ratio_high")
    for key, value in ((actor + "clip_ratio_low", low), (actor + "clip_ratio_high", high)):
        if interpolated(value):
            get(key)  # one ConfigError naming it
    used |= {actor + "clip_ratio_low", actor + "clip_ratio_high"}
    if low is not None and high is not None:  # clip_ratio is then not read: no note of its default
        used.add(actor + "clip_ratio")
        clip = None
    else:
        clip = _number(actor + "clip_ratio", get(actor + "clip_ratio", 0.2), positive=True)
        unset = [side for side in ("low", "high") if actor + f"clip_ratio_{side}" not in flat]  # null: the fallback
        threshold = flat.get(actor + "policy_loss.loss_mode") in ("dppo_tv", "dppo_kl")  # clip_ratio is their own
        if not early and not threshold and unset and flat.get(actor + "clip_ratio") is not None and clip != 0.2:
            low, high = (0.2 if "low" in unset else low), (0.2 if "high" in unset else high)
            sides = " and ".join(f"clip_ratio_{side}" for side in unset)
            said.append(f"{actor}clip_ratio {clip:g} bounds no ratio in verl >= 0.4, whose {sides} (0.2 unless given) "
                        f"bound it: read as verl >= 0.4 runs it, [{_shown(low, clip)}, {_shown(high, clip)}]; "
                        f"clip_ratio_low and clip_ratio_high {clip:g} give the clip it meant (on verl < 0.4 "
                        "clip_ratio was the clip)")
    low = clip if low is None else _number(actor + "clip_ratio_low", low, positive=True)
    high = clip if high is None else _number(actor + "clip_ratio_high", high, positive=True)
    return low, high


# verl 0.9.1's registered policy losses (`core_algos.register_policy_loss`)
VERL_LOSSES = {"vanilla": "PPO's token clip, dual-clipped", "gspo": "GSPO's sequence clip", "cispo": "CISPO's capped weight",
               "sapo": "SAPO's soft gate", "gpg": "a plain policy gradient"}
VERL_UNMODELLED_LOSSES = {"dppo_tv": "a total-variation trust region", "dppo_kl": "a KL trust region",
                          "clip_cov": "a clip of high-covariance tokens", "kl_cov": "a KL penalty on high-covariance tokens",
                          "geo_mean": "a geometric-mean sequence ratio (GMPO)", "dro": "a distributionally robust loss",
                          "bypass_mode": "the rollout's log-probs as the ratio's reference"}


def _verl_loss(mode: Any, aggregation: str, get, notes: list[str], said: list[str]) -> tuple[str, str]:
    """(correction, clip_mode) of policy_loss.loss_mode; a loss outside the model is read as vanilla's token clip,
    said; SAPO's soft gate has no band edge, read as an uncorrected push (the collapse limit uncapped: the safe side);
    GSPO under token-mean, a length-weighted objective, is said first (`said`), as TRL's is."""
    if mode in VERL_UNMODELLED_LOSSES:
        notes.append(f"policy_loss.loss_mode {mode}: {VERL_UNMODELLED_LOSSES[mode]}, not modelled; read as PPO's token "
                     "clip")
        return "token", "stop"
    if mode not in VERL_LOSSES:
        raise ConfigError(f"policy_loss.loss_mode {mode!r} is not a loss of verl 0.9.1 "
                          f"({', '.join(sorted(VERL_LOSSES | VERL_UNMODELLED_LOSSES))})")
    if mode == "gspo" and aggregation == "token-mean":
        said.append("loss_mode gspo under loss_agg_mode token-mean: each sequence weighs by its length, not GSPO's "
                     "per-sequence objective (seq-mean-token-mean reproduces the paper)")
    if mode == "sapo":
        notes.append(f"loss_mode sapo: a soft gate sigmoid(tau (r - 1)) 4 / tau (tau_pos / tau_neg = "
                     f"{get('actor_rollout_ref.actor.tau_pos', 1.0)} / {get('actor_rollout_ref.actor.tau_neg', 1.05)}) "
                     "in place of a clip: no band edge, read as an uncorrected push (the collapse limit uncapped, on "
                     "the safe side)")
    if mode in ("sapo", "gpg"):
        return "none", "stop"
    return ("sequence" if mode == "gspo" else "token"), clip_mode(mode)
