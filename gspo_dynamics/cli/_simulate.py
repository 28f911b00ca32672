"""`gspo-dynamics simulate`: simulate in torch (bandit or sequence testbed) and compare with the
prediction (`gspo_dynamics.sim.compare`).

The two testbeds share the hyperparameter flags but not their defaults: every option's parser
default is None, so a flag given can be told from one left out; the bandit's defaults are filled
in afterwards, the sequence testbed's come from its config (`sim.compare.sequence_defaults`).
A flag of the other testbed is an error.
"""

from __future__ import annotations

import argparse
import json

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli._options import add_hyperparams, bandit_from_args, hyperparams_from_args, integer

BANDIT_STEPS = 400  # optimizer steps of a bandit comparison (the sequence testbed: sequence_defaults())
BANDIT_SEEDS = 64  # independent runs for finite G
BANDIT_ONLY = ("num_groups", "std_estimator", "correction", "kl_estimator", "ref_logit", "init_logit", "seeds")
SEQUENCE_ONLY = ("task", "length", "digits", "min_matches", "min_count", "parity", "policy", "objective",
                 "prompts_per_step", "routing_replay", "dynamic_sampling")
_FLAGS = "simulate_flags"  # namespace attribute: dest -> (flag, bandit default)


def register(sub) -> None:
    s = sub.add_parser("simulate", help="simulate in torch (bandit or sequence testbed) and compare with the prediction",
                       description="Does the theory's prediction hold: simulates the two-armed bandit or a small "
                                   "sequence task in torch and compares the result with the closed-form prediction.",
                       usage="%(prog)s --lr LR --kl KL [-T T] [-G G] ...   (the bandit)\n"
                             "       %(prog)s --testbed sequence --objective LOSS [--task TASK] ...",
                       epilog_from=_sequence_epilog)
    actions = add_hyperparams(s, testbeds=("bandit", "sequence"))
    actions += [
        s.add_argument("--steps", type=integer, default=BANDIT_STEPS,
                       help=f"optimizer steps (default: {BANDIT_STEPS}; sequence: below)"),
        s.add_argument("--seeds", type=integer, default=BANDIT_SEEDS,
                       help=f"independent runs for finite G (bandit; default: {BANDIT_SEEDS})"),
        s.add_argument("--seed", type=int, default=0, help="random seed (default: 0)"),
        s.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda (default: cpu)"),
        s.add_argument("--json", action="store_true", help="print one JSON object"),
        s.add_argument("--no-progress", action="store_true", help="no progress bar"),
    ]
    q = s.add_argument_group("sequence testbed (--testbed sequence; defaults below)")
    actions += [
        q.add_argument("--task", help="pattern | count | addition"),
        q.add_argument("--length", type=integer, help="response length L of pattern and count"),
        q.add_argument("--digits", type=integer, help="digits per operand of addition"),
        q.add_argument("--min-matches", type=integer, help="pattern: matches needed for reward 1 (default: ceil(L/2))"),
        q.add_argument("--min-count", type=int, help="count: occurrences of the token needed"),
        q.add_argument("--parity", help="count: even | odd | any, the count's parity"),
        q.add_argument("--policy", help="tabular | transformer | moe"),
        q.add_argument("--objective", help="a loss of the registry: pg, grpo, dr_grpo, dapo, cispo, gspo, gspo_token (required)"),
        q.add_argument("--prompts-per-step", type=integer, help="prompts N per optimizer step, G responses each"),
        q.add_argument("--routing-replay", help="moe: none | full | experts"),
        q.add_argument("--dynamic-sampling", action="store_true", help="drop groups with equal rewards (DAPO)"),
    ]
    flags = {a.dest: (next(o for o in a.option_strings if o.startswith("--")), a.default) for a in actions}
    s.set_defaults(run=_cmd_simulate, **{_FLAGS: flags}, **dict.fromkeys(flags))  # None: "not given"


def _sequence_epilog() -> str:
    from gspo_dynamics.sim.compare import sequence_defaults

    own = "the objective's"  # a config field left None
    given = ", ".join(f"{k} {own if v is None else v}" for k, v in sequence_defaults().items())
    return ("With --testbed sequence a flag left out takes the sequence testbed's default "
            f"(gspo_dynamics.sim.compare.sequence_defaults: {given}); --advantage mean/std selects the scale "
            "none/group (default: the objective's). A flag of the other testbed is an error.")


def _given(args: argparse.Namespace, dests) -> list[str]:
    """The flags among `dests` given on the command line."""
    flags = getattr(args, _FLAGS)
    return [flags[d][0] for d in dests if getattr(args, d) is not None]


def _reject(args: argparse.Namespace, dests, why: str) -> None:
    given = _given(args, dests)
    if given:
        raise ConfigError(f"{given[0]} {why}")


def _fill_bandit_defaults(args: argparse.Namespace) -> None:
    for dest, (_, default) in getattr(args, _FLAGS).items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)


def _cmd_simulate(args: argparse.Namespace) -> int:
    if args.testbed == "sequence":
        return _simulate_sequence(args)
    _reject(args, SEQUENCE_ONLY, "applies to --testbed sequence only")
    _fill_bandit_defaults(args)
    return _simulate_bandit(args)


def _simulate_bandit(args: argparse.Namespace) -> int:
    from gspo_dynamics.predict import as_json_ready
    from gspo_dynamics.sim.compare import compare_bandit, comparison_lines

    report = compare_bandit(
        bandit_from_args(args), hyperparams_from_args(args), steps=args.steps, seeds=args.seeds,
        seed=args.seed, device=args.device, progress=not args.no_progress,
    )
    if args.json:
        print(json.dumps(as_json_ready(report), allow_nan=False))
    else:
        print("\n".join(comparison_lines(report)))
    return 0


def _sequence_optimizer(args: argparse.Namespace):
    """SGD or Adam from the flags given (the ones left out: the optimizer's defaults)."""
    from gspo_dynamics.theory.hyperparams import SGD, Adam

    if args.optimizer == "sgd":
        _reject(args, ("beta1", "beta2", "adam_eps"), "applies to --optimizer adam only")
        return SGD(**({} if args.momentum is None else {"momentum": args.momentum}))
    _reject(args, ("momentum",), "applies to --optimizer sgd only (the sequence testbed's default is adam)")
    adam = {"beta1": args.beta1, "beta2": args.beta2, "eps": args.adam_eps}
    return Adam(**{k: v for k, v in adam.items() if v is not None})


def _sequence_config(args: argparse.Namespace):
    """SequenceRLConfig from the flags given; the ones left out take its defaults."""
    from gspo_dynamics.sim.sequence import SequenceRLConfig

    if args.objective is None:
        raise ConfigError("--testbed sequence needs --objective (pg, grpo, dr_grpo, dapo, cispo, gspo or gspo_token)")
    fields = {
        "lr": args.lr, "refresh_interval": args.refresh_interval, "group_size": args.group_size,
        "prompts_per_step": args.prompts_per_step, "clip_low": args.clip_low, "clip_high": args.clip_high,
        "advantage_scale": {None: None, "mean": "none", "std": "group"}[args.advantage], "kl_coef": args.kl,
        "routing_replay": args.routing_replay, "dynamic_sampling": args.dynamic_sampling,
    }
    given = {k: v for k, v in fields.items() if v is not None}
    return SequenceRLConfig(objective=args.objective, optimizer=_sequence_optimizer(args), **given)


def _simulate_sequence(args: argparse.Namespace) -> int:
    from gspo_dynamics.sim.compare import compare_sequence, sequence_defaults, sequence_lines, sequence_policy, sequence_task

    _reject(args, BANDIT_ONLY, "applies to --testbed bandit only")
    config = _sequence_config(args)
    defaults = sequence_defaults()
    task = sequence_task(args.task or defaults["task"], length=args.length, digits=args.digits,
                         min_matches=args.min_matches, min_count=args.min_count, parity=args.parity)
    seed = 0 if args.seed is None else args.seed
    policy = sequence_policy(args.policy or defaults["policy"], task, seed=seed)
    report = compare_sequence(task, policy, config, steps=args.steps or defaults["steps"], seed=seed,
                              device=args.device or "cpu", progress=not args.no_progress)
    if args.json:
        print(json.dumps(report, allow_nan=False))
    else:
        print("\n".join(sequence_lines(report)))
    return 0
