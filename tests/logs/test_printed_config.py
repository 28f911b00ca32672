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


def test_a_log_without_a_printed_config_or_with_one_cut_short_gives_none():
    assert printed_config("step:1 - critic/score/mean:0.1\nstep:2 - critic/score/mean:0.2\n") is None
    text = _printed(CONFIG)
    cut = text[: text.index("'data'")]  # the job killed while it printed the config
    assert printed_config(cut) is None
    assert printed_config(RAY + "{'actor_rollout_ref': {'actor': __import__('os')}}\n") is None  # no code is run
