"""The `gspo-dynamics` command. Thin: parse, build the config, call one library function, print.

Bad input (an impossible hyperparameter, an unknown name, a `simulate` flag of the other testbed)
prints one line `gspo-dynamics: error: ...` and exits with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

from gspo_dynamics import __version__
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli import _diagnose, _figures, _repro, _train
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics.theory.hyperparams import ADVANTAGES, CORRECTIONS, KL_ESTIMATORS, STD_ESTIMATORS, SGD, Adam, Hyperparams

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (argparse prints the usage block and the error)."""

    def error(self, message: str):  # noqa: D401 - argparse API
        raise ConfigError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    return value


def _add_hyperparams(p: argparse.ArgumentParser, testbeds: tuple[str, ...] = ("bandit",)) -> None:
    g = p.add_argument_group("training hyperparameters")
    g.add_argument("--lr", type=float, default=2.0, help="learning rate eta (default: 2.0)")
    g.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd", help="sgd (heavy-ball) or adam (default: sgd)")
    g.add_argument("--momentum", type=float, default=0.0, help="heavy-ball momentum mu for sgd (default: 0)")
    g.add_argument("--beta1", type=float, default=0.9, help="Adam beta1 (default: 0.9)")
    g.add_argument("--beta2", type=float, default=0.999, help="Adam beta2 (default: 0.999)")
    g.add_argument("--adam-eps", type=float, default=1e-8, help="Adam epsilon (default: 1e-8)")
    g.add_argument("--refresh-interval", "-T", type=_positive_int, default=1,
                   help="optimizer steps between refreshes of the sampling policy (TRL: steps_per_generation x num_iterations; default: 1)")
    g.add_argument("--group-size", "-G", type=_positive_int, default=None,
                   help="responses per prompt G (default: G -> infinity, the expected dynamics)")
    g.add_argument("--num-groups", type=_positive_int, default=1, help="groups per optimizer step (default: 1)")
    g.add_argument("--advantage", choices=ADVANTAGES, default="mean", help="mean: r - mean; std: also divided by the group std")
    g.add_argument("--std-estimator", choices=STD_ESTIMATORS, default="unbiased", help="group std with or without Bessel's correction")
    g.add_argument("--correction", choices=CORRECTIONS, default="none", help="off-policy correction (default: none)")
    g.add_argument("--clip-low", type=float, default=0.2, help="eps_low of the ratio clip (default: 0.2)")
    g.add_argument("--clip-high", type=float, default=0.2, help="eps_high of the ratio clip (default: 0.2)")
    g.add_argument("--kl", type=float, default=0.5, help="KL weight beta (default: 0.5)")
    g.add_argument("--kl-estimator", choices=KL_ESTIMATORS, default="exact", help="exact KL or the k3 estimator")
    b = p.add_argument_group("testbed")
    b.add_argument("--testbed", choices=testbeds, default="bandit",
                   help="bandit: two-armed softmax bandit (exact reduction)"
                   + ("; sequence: synthetic sequence tasks with small torch policies" if "sequence" in testbeds else ""))
    b.add_argument("--ref-logit", type=float, default=-1.0, help="reference logit: pi_ref(1) = sigmoid(ref_logit) (default: -1)")
    b.add_argument("--init-logit", type=float, default=None, help="initial logit (default: the reference)")


def hyperparams_from_args(args: argparse.Namespace) -> Hyperparams:
    optimizer = SGD(momentum=args.momentum) if args.optimizer == "sgd" else Adam(beta1=args.beta1, beta2=args.beta2, eps=args.adam_eps)
    return Hyperparams(
        lr=args.lr, optimizer=optimizer, refresh_interval=args.refresh_interval, group_size=args.group_size,
        num_groups=args.num_groups, advantage=args.advantage, std_estimator=args.std_estimator,
        correction=args.correction, clip_low=args.clip_low, clip_high=args.clip_high,
        kl_coef=args.kl, kl_estimator=args.kl_estimator,
    )


def bandit_from_args(args: argparse.Namespace) -> TwoArmBandit:
    return TwoArmBandit(ref_logit=args.ref_logit, init_logit=args.init_logit)


SEQUENCE_EPILOG = (
    "With --testbed sequence the hyperparameter defaults are those of "
    "gspo_dynamics.sim.sequence.SequenceRLConfig (adam, lr 0.05, G 8, N 4, T 1, the objective's clip range, "
    "no KL); --advantage mean/std selects the scale none/group (default: the objective's). "
    "A flag of the other testbed is an error."
)
BANDIT_ONLY = ("num_groups", "std_estimator", "correction", "kl_estimator", "ref_logit", "init_logit", "seeds")
SEQUENCE_ONLY = ("task", "length", "digits", "min_matches", "min_count", "parity", "policy", "objective",
                 "prompts_per_step", "routing_replay", "dynamic_sampling")
_SIMULATE_DEFAULTS = "simulate_defaults"  # namespace attribute: dest -> (flag, bandit default)


def _defer_defaults(parser: argparse.ArgumentParser) -> None:
    """Set every option's default to None, so a flag given explicitly can be told from one left
    out, and keep the (bandit) defaults for `_fill_defaults`."""
    defaults = {}
    for action in parser._actions:
        if action.option_strings and action.dest not in ("help", argparse.SUPPRESS):
            flag = next(o for o in action.option_strings if o.startswith("--"))
            defaults[action.dest] = (flag, action.default)
            action.default = None
    parser.set_defaults(**{_SIMULATE_DEFAULTS: defaults})


def _given(args: argparse.Namespace, dests) -> list[str]:
    """The flags among `dests` given on the command line."""
    defaults = getattr(args, _SIMULATE_DEFAULTS)
    return [defaults[d][0] for d in dests if getattr(args, d) is not None]


def _reject(args: argparse.Namespace, dests, why: str) -> None:
    given = _given(args, dests)
    if given:
        raise ConfigError(f"{given[0]} {why}")


def _fill_defaults(args: argparse.Namespace) -> None:
    for dest, (_, default) in getattr(args, _SIMULATE_DEFAULTS).items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gspo-dynamics", description="Predict and check the training dynamics of GRPO/GSPO.")
    parser.add_argument("--version", action="version", version=f"gspo-dynamics {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("predict", help="stability, regime and thresholds from the theory alone")
    _add_hyperparams(p)
    p.add_argument("--t-max", type=_positive_int, default=10_000, help="largest refresh interval searched (default: 10000)")
    p.add_argument("--no-from-start", action="store_true", help="skip the nonlinear from-start check")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=_cmd_predict)

    s = sub.add_parser("simulate", help="simulate in torch (bandit or sequence testbed) and compare with the prediction",
                       epilog=SEQUENCE_EPILOG)
    _add_hyperparams(s, testbeds=("bandit", "sequence"))
    s.add_argument("--steps", type=_positive_int, default=400, help="optimizer steps (default: 400; sequence: 100)")
    s.add_argument("--seeds", type=_positive_int, default=64, help="independent runs for finite G (bandit; default: 64)")
    s.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    s.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda (default: cpu)")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    q = s.add_argument_group("sequence testbed (--testbed sequence)")
    q.add_argument("--task", help="pattern | count | addition (default: pattern)")
    q.add_argument("--length", type=_positive_int, help="response length L of pattern and count (default: 4)")
    q.add_argument("--digits", type=_positive_int, help="digits per operand of addition (default: 1)")
    q.add_argument("--min-matches", type=_positive_int, help="pattern: matches needed for reward 1 (default: ceil(L/2))")
    q.add_argument("--min-count", type=int, help="count: occurrences of the token needed (default: 0)")
    q.add_argument("--parity", help="count: even | odd | any, the count's parity (default: even)")
    q.add_argument("--policy", help="tabular | transformer | moe (default: tabular)")
    q.add_argument("--objective", help="a loss of the registry: pg, grpo, dr_grpo, dapo, cispo, gspo, gspo_token (required)")
    q.add_argument("--prompts-per-step", type=_positive_int, help="prompts N per optimizer step, G responses each (default: 4)")
    q.add_argument("--routing-replay", help="moe: none | full | experts (default: none)")
    q.add_argument("--dynamic-sampling", action="store_true", help="drop groups with equal rewards (DAPO)")
    s.set_defaults(run=_cmd_simulate)
    _defer_defaults(s)
    _repro.register(sub)
    _figures.register(sub)
    _train.register(sub)
    _diagnose.register(sub)
    return parser


def _cmd_predict(args: argparse.Namespace) -> int:
    from gspo_dynamics.predict import as_json_ready, predict_bandit, summary_lines

    def note(message: str) -> None:  # long from-start scans say what they are doing, on a terminal only
        if sys.stderr.isatty():
            print(f"gspo-dynamics: {message} ...", file=sys.stderr)

    report = predict_bandit(bandit_from_args(args), hyperparams_from_args(args), t_max=args.t_max,
                            from_start=not args.no_from_start, progress=note)
    if args.json:
        print(json.dumps(as_json_ready(report), allow_nan=False))
    else:
        print("\n".join(summary_lines(report)))
    return 0


def _cmd_simulate(args: argparse.Namespace) -> int:
    if args.testbed == "sequence":
        return _simulate_sequence(args)
    _reject(args, SEQUENCE_ONLY, "applies to --testbed sequence only")
    _fill_defaults(args)
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


def _sequence_config(args: argparse.Namespace):
    """SequenceRLConfig from the flags given; the ones left out take its defaults."""
    from gspo_dynamics.sim.sequence import SequenceRLConfig
    from gspo_dynamics.theory.hyperparams import SGD, Adam

    if args.objective is None:
        raise ConfigError("--testbed sequence needs --objective (pg, grpo, dr_grpo, dapo, cispo, gspo or gspo_token)")
    if args.optimizer == "sgd":
        _reject(args, ("beta1", "beta2", "adam_eps"), "applies to --optimizer adam only")
        optimizer = SGD(**({} if args.momentum is None else {"momentum": args.momentum}))
    else:
        _reject(args, ("momentum",), "applies to --optimizer sgd only (the sequence testbed's default is adam)")
        adam = {"beta1": args.beta1, "beta2": args.beta2, "eps": args.adam_eps}
        optimizer = Adam(**{k: v for k, v in adam.items() if v is not None})
    fields = {
        "lr": args.lr, "refresh_interval": args.refresh_interval, "group_size": args.group_size,
        "prompts_per_step": args.prompts_per_step, "clip_low": args.clip_low, "clip_high": args.clip_high,
        "advantage_scale": {None: None, "mean": "none", "std": "group"}[args.advantage], "kl_coef": args.kl,
        "routing_replay": args.routing_replay, "dynamic_sampling": args.dynamic_sampling,
    }
    given = {k: v for k, v in fields.items() if v is not None}
    return SequenceRLConfig(objective=args.objective, optimizer=optimizer, **given)


def _simulate_sequence(args: argparse.Namespace) -> int:
    from gspo_dynamics.sim.compare import (
        DEFAULT_SEQUENCE_STEPS, compare_sequence, sequence_lines, sequence_policy, sequence_task,
    )

    _reject(args, BANDIT_ONLY, "applies to --testbed bandit only")
    config = _sequence_config(args)
    task = sequence_task(args.task or "pattern", length=args.length, digits=args.digits, min_matches=args.min_matches,
                         min_count=args.min_count, parity=args.parity)
    seed = 0 if args.seed is None else args.seed
    policy = sequence_policy(args.policy or "tabular", task, seed=seed)
    report = compare_sequence(task, policy, config, steps=args.steps or DEFAULT_SEQUENCE_STEPS, seed=seed,
                              device=args.device or "cpu", progress=not args.no_progress)
    if args.json:
        print(json.dumps(report, allow_nan=False))
    else:
        print("\n".join(sequence_lines(report)))
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except ConfigError as exc:
        print(f"gspo-dynamics: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("gspo-dynamics: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
