"""Options shared by the commands: the training hyperparameters of `predict` and `simulate` (and
their defaults, read from the config dataclasses), integer parsing, and dataclass defaults."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics._keys import REFRESH_INTERVAL_KEYS
from gspo_dynamics.theory.hyperparams import ADVANTAGES, CORRECTIONS, KL_ESTIMATORS, STD_ESTIMATORS, SGD, Adam, Hyperparams

# The command's own example where the dataclasses have none (Hyperparams.lr) or another one: the
# canonical bandit of the README (pi_ref(1) = sigmoid(-1), KL weight 0.5, a stable on-policy lr).
BANDIT_LR = 2.0
BANDIT_KL_COEF = 0.5
BANDIT_REF_LOGIT = -1.0


def field_default(cls, name: str):
    """The default of dataclass field `name` of `cls` (its default_factory called)."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


def add_config_options(group, config_help: str, answer: str) -> None:
    """--config (its help `config_help`), --set KEY=VALUE (repeatable) and --allow-unknown, read by
    `predict.read_run_config`; `answer`: what names the unknown keys read past ("the answer", "the report")."""
    group.add_argument("--config", metavar="FILE", help=config_help)
    group.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config key (dotted for nested configs, as a verl run script passes them), e.g. "
                            "--set algorithm.adv_estimator=grpo --set actor_rollout_ref.rollout.n=8; repeatable, one "
                            "pair each")
    group.add_argument("--allow-unknown", action="store_true",
                       help="read on past config keys the framework does not have (else an error naming each and its "
                            f"nearest known key); {answer}'s first lines name them")


def add_log_run_option(group, whose: str = "the log") -> None:
    """--run K (into `args.log_run`; `args.run` is the command): which run of a log that holds several, for
    `read_log(run=K)`."""
    group.add_argument("--run", dest="log_run", type=run_number, metavar="K",
                       help=f"which run of {whose} to read where it holds several (its step counter starts again: "
                            "runs appended to one file, concatenated logs), 1 = the first (default: the last)")


def run_number(text: str) -> int:
    """argparse type: a run's number in its file, 1 or more."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a run number, 1 for the file's first run or more, got {text!r}")
    return value


def integer(text: str) -> int:
    """argparse type: an integer (its range is checked by the config it goes into)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def add_hyperparams(p: argparse.ArgumentParser, testbeds: tuple[str, ...] = ("bandit",),
                    title: str = "training hyperparameters") -> list[argparse.Action]:
    """The training hyperparameter flags (in a group of `title`) and the testbed flags; returns the actions added."""
    hp = lambda name: field_default(Hyperparams, name)  # noqa: E731 - a short local alias
    sgd, adam = SGD(), Adam()
    g = p.add_argument_group(title)
    b = p.add_argument_group("testbed")
    sequence = "; sequence: synthetic sequence tasks with small torch policies" if "sequence" in testbeds else ""
    return [
        g.add_argument("--lr", type=float, default=BANDIT_LR, help=f"learning rate eta (default: {BANDIT_LR:g})"),
        g.add_argument("--optimizer", choices=("sgd", "adam"), default=sgd.name,
                       help=f"sgd (heavy-ball) or adam (default: {sgd.name})"),
        g.add_argument("--momentum", type=float, default=sgd.momentum,
                       help=f"heavy-ball momentum mu for sgd (default: {sgd.momentum:g})"),
        g.add_argument("--beta1", type=float, default=adam.beta1, help=f"Adam beta1 (default: {adam.beta1:g})"),
        g.add_argument("--beta2", type=float, default=adam.beta2, help=f"Adam beta2 (default: {adam.beta2:g})"),
        g.add_argument("--adam-eps", type=float, default=adam.eps, help=f"Adam epsilon (default: {adam.eps:g})"),
        g.add_argument("--refresh-interval", "-T", type=integer, default=hp("refresh_interval"),
                       help="optimizer steps between refreshes of the sampling policy "
                            f"({REFRESH_INTERVAL_KEYS}; default: {hp('refresh_interval')})"),
        g.add_argument("--group-size", "-G", type=integer, default=hp("group_size"),
                       help="responses per prompt G (default: G -> infinity, the expected dynamics)"),
        g.add_argument("--num-groups", type=integer, default=hp("num_groups"),
                       help=f"groups per optimizer step (default: {hp('num_groups')})"),
        g.add_argument("--advantage", choices=ADVANTAGES, default=hp("advantage"),
                       help=f"mean: r - mean; std: also divided by the group std (default: {hp('advantage')})"),
        g.add_argument("--std-estimator", choices=STD_ESTIMATORS, default=hp("std_estimator"),
                       help=f"group std with or without Bessel's correction (default: {hp('std_estimator')})"),
        g.add_argument("--correction", choices=CORRECTIONS, default=hp("correction"),
                       help=f"off-policy correction (default: {hp('correction')})"),
        g.add_argument("--clip-low", type=float, default=hp("clip_low"),
                       help=f"eps_low of the ratio clip (default: {hp('clip_low'):g})"),
        g.add_argument("--clip-high", type=float, default=hp("clip_high"),
                       help=f"eps_high of the ratio clip (default: {hp('clip_high'):g})"),
        g.add_argument("--kl", type=float, default=BANDIT_KL_COEF, help=f"KL weight beta (default: {BANDIT_KL_COEF:g})"),
        g.add_argument("--kl-estimator", choices=KL_ESTIMATORS, default=hp("kl_estimator"),
                       help=f"exact KL or the k3 estimator (default: {hp('kl_estimator')})"),
        b.add_argument("--testbed", choices=testbeds, default="bandit",
                       help=f"bandit: two-armed softmax bandit (exact reduction){sequence}"),
        b.add_argument("--ref-logit", type=float, default=BANDIT_REF_LOGIT,
                       help=f"reference logit: pi_ref(1) = sigmoid(ref_logit) (default: {BANDIT_REF_LOGIT:g})"),
        b.add_argument("--init-logit", type=float, default=field_default(TwoArmBandit, "init_logit"),
                       help="initial logit (default: the reference)"),
    ]


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


def save_figure(fig, path: str) -> None:
    """Write a matplotlib Figure to `path`; a missing folder or an unknown extension is one ConfigError."""
    if not Path(path).resolve().parent.is_dir():
        raise ConfigError(f"cannot write the plot to {path!r}: its folder does not exist")
    try:
        fig.savefig(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot write the plot to {path!r}: {exc}") from None
