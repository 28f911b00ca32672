"""`logs.printed_config`: verl's resolved config as its trainer printed it at the start of a console log."""

from __future__ import annotations

import pprint

from gspo_dynamics.logs import printed_config

CONFIG = {"actor_rollout_ref": {"actor": {"optim": {"lr": 3e-6, "betas": [0.9, 0.999]}, "ppo_mini_batch_size": 64,
                                          "ppo_epochs": 1, "clip_ratio": 0.2},
                                "rollout": {"n": 8, "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"}},
          "algorithm": {"adv_estimator": "grpo", "kl_ctrl": {"kl_coef": 0.001}},
          "data": {"train_batch_size": 128, "max_response_length": 1024}, "trainer": {"total_training_steps": 40}}
RAY = "\x1b[36m(TaskRunner pid=14640)\x1b[0m "


def _printed(config: dict, interleave: bool = False) -> str:
    lines = [RAY + line for line in pprint.pformat(config, width=60).splitlines()]
    if interleave:  # another Ray process writes between the dict's lines
        lines = [x for line in lines for x in (line, "\x1b[36m(WorkerDict pid=15)\x1b[0m Flash Attention {2.0} warning")]
    return "\n".join(["2025-06-01 starting", *lines, RAY + "step:1 - critic/score/mean:0.1"]) + "\n"


def test_the_printed_dict_is_read_whole_behind_its_ray_prefix_with_other_processes_lines_between():
    """pprint's dict over many lines, each behind `(TaskRunner pid=N)`, other processes' lines (with braces of their
    own) in between, and a chat template whose `{%` is a string's, not nesting: read as the dict it printed."""
    for interleave in (False, True):
        found = printed_config(_printed(CONFIG, interleave))
        assert found is not None and found.config == CONFIG and found.line == 2 and found.framework == "verl"


def test_a_log_without_a_printed_config_gives_none_and_one_that_does_not_parse_says_why():
    assert printed_config("step:1 - critic/score/mean:0.1\nstep:2 - critic/score/mean:0.2\n") is None
    text = _printed(CONFIG)
    cut = printed_config(text[: text.index("'data'")])  # the job killed while it printed the config
    assert cut.config is None and "do not close" in cut.why and cut.line == 2
    code = printed_config(RAY + "{'actor_rollout_ref': {'actor': __import__('os')}}\n")  # no code is run
    assert code.config is None and "Python dict literal" in code.why


def test_several_different_printed_configs_give_none_and_the_same_one_twice_is_read():
    """Runs appended to one log, each printing its config: which run's config the answer is for is not the log's to
    say (review s42: the first was read for the last run); the same config printed twice (a restart) is read."""
    other = {**CONFIG, "data": {"train_batch_size": 64, "max_response_length": 512}}
    two = printed_config(_printed(CONFIG) + _printed(other))
    assert two.config is None and "printed 2 different configs" in two.why
    assert printed_config(_printed(CONFIG) + _printed(CONFIG)).config == CONFIG


def test_pprints_bare_inf_and_nan_and_a_timestamp_prefix_are_read():
    """pprint writes float('inf') as `inf` and nan as `nan` (no literal); a logger's timestamp differs line to line:
    the prefix is matched by its shape, digits aside."""
    config = {**CONFIG, "trainer": {"total_training_steps": 40, "max_norm": float("inf"), "ratio": float("nan")}}
    found = printed_config(_printed(config))
    assert found.config["trainer"]["max_norm"] == float("inf") and found.config["trainer"]["ratio"] is None
    stamped = "\n".join(f"2025-06-01 12:00:{i % 60:02d} INFO {line}" for i, line in
                        enumerate(pprint.pformat(CONFIG, width=60).splitlines()))
    assert printed_config(stamped + "\n").config == CONFIG
