"""Search-R1's group (a verl 0.1 fork that MEM1 and other agent RL repos descend from): actor_rollout_ref.rollout.n_agent
copies of each prompt, rollout.n responses to each, grouped by the prompt's index under do_search, and a mini-batch of
ppo_mini_batch_size x rollout.n rows (`predict._verl`'s docstring). The mapping is checked against a replay of that
trainer's batching, written here from its description: rows, uids, mini-batches counted."""

from __future__ import annotations

import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import read_run_config
from gspo_dynamics.predict._headline import refresh_changes


def search_r1(n_agent=5, n=None, do_search=None, batch=512, mini=256, epochs=1) -> dict:
    rollout = {"n_agent": n_agent, "temperature": 1} | ({} if n is None else {"n": n})
    return ({"data": {"train_batch_size": batch}, "algorithm": {"adv_estimator": "grpo"},
             "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": mini, "ppo_epochs": epochs},
                                   "rollout": rollout}}
            | ({} if do_search is None else {"do_search": do_search}))


def replay(n_agent, n, do_search, batch, mini, epochs) -> tuple[int, int, float]:
    """(G, optimizer steps per rollout, groups per step): the trainer's rows and uids, its mini-batches counted."""
    rows = []  # (prompt, copy): the batch repeated n_agent times, interleaved
    for prompt in range(batch):
        rows += [(prompt, copy) for copy in range(n_agent)]
    uids = [prompt if do_search else (prompt, copy) for prompt, copy in rows]  # uid = index, else one per copy
    uids = [u for u in uids for _ in range(n)]  # n responses to each row
    sizes = {u: uids.count(u) for u in set(uids[: 4 * n_agent * n])}
    (G,) = set(sizes.values())
    per_step = mini * n  # the workers scale the mini-batch by rollout.n alone
    steps = epochs * -(-len(uids) // per_step)
    return G, steps, per_step / G


@pytest.mark.parametrize("n_agent, n, do_search", [(5, None, None), (2, 4, True), (3, 4, False), (5, 1, True)])
@pytest.mark.parametrize("mini, epochs", [(256, 1), (128, 2)])
def test_the_mapping_replays_search_r1s_batching(n_agent, n, do_search, mini, epochs):
    setup = read_run_config(search_r1(n_agent, n, do_search, mini=mini, epochs=epochs))
    G, steps, groups = replay(n_agent, n or 1, do_search is not False, 512, mini, epochs)
    hp = setup.hparams
    assert (hp.group_size, hp.refresh_interval, hp.num_groups) == (G, steps, max(1, round(groups)))
    assert setup.unknown == () and setup.framework == "verl"


def test_the_first_lines_say_g_comes_from_n_agent():
    setup = read_run_config(search_r1())  # vengdeng/LLDS's train_grpo_nqhot.sh: n_agent 5, no rollout.n
    (line,) = setup.read_as
    assert line.startswith("G = 5 from rollout.n_agent (Search-R1's group size")
    assert "T = ppo_epochs x train_batch_size x n_agent / ppo_mini_batch_size = 1 x 512 x 5 / 256 = 10" in line
    assert setup.brief_lines()[0] == line and setup.brief_json()["read_as"] == [line]
    assert "actor_rollout_ref.rollout.n not given: Search-R1's default 1" in setup.notes
    assert setup.keys.group == "actor_rollout_ref.rollout.n_agent"
    (change,) = refresh_changes(setup, 1, "on-policy")  # T = 1: one mini-batch holds the rollout's 512 x 5 rows
    assert change.setting == "actor_rollout_ref.actor.ppo_mini_batch_size=2560"
    assert read_run_config(search_r1(mini=2560)).hparams.refresh_interval == 1


def test_with_do_search_false_the_copies_are_groups_of_n():
    setup = read_run_config(search_r1(n_agent=3, n=4, do_search=False))
    assert setup.hparams.group_size == 4 and setup.keys.group == "actor_rollout_ref.rollout.n"
    assert "do_search false" in setup.read_as[0]


def test_a_config_with_neither_key_is_refused_naming_both():
    cfg = search_r1()
    del cfg["actor_rollout_ref"]["rollout"]["n_agent"]
    with pytest.raises(ConfigError, match=r"leaves actor_rollout_ref.rollout.n unset, .*\(G, .*rollout.n_agent\)"):
        read_run_config(cfg)
    with pytest.raises(ConfigError, match="rollout.n_agent must be >= 2"):
        read_run_config(search_r1(n_agent=1))  # Search-R1's PPO scripts: one copy, one response
    assert read_run_config(search_r1(n_agent=1, n=5)).hparams.group_size == 5


def test_the_noise_line_doubles_the_responses_per_step_as_search_r1_counts_them():
    """Doubling n_agent doubles G and T, not the responses per optimizer step (ppo_mini_batch_size x rollout.n); the
    line names the edit that does double them at the same T, and that edit read back does so."""
    from gspo_dynamics.predict import config_forecast
    from gspo_dynamics.predict._headline import config_headline

    setup = read_run_config(search_r1())
    line = next(s for s in config_headline(config_forecast(setup)).settled if s.startswith("reward noise"))
    assert "data.train_batch_size=1024 with actor_rollout_ref.actor.ppo_mini_batch_size=512 (T kept" in line
    hp, doubled = setup.hparams, read_run_config(search_r1(batch=1024, mini=512)).hparams
    assert doubled.refresh_interval == hp.refresh_interval and doubled.group_size == hp.group_size
    assert doubled.num_groups * doubled.group_size >= 2 * hp.num_groups * hp.group_size - hp.group_size
    more = read_run_config(search_r1(n_agent=10)).hparams  # n_agent doubled: G and T double, N G per step does not
    assert (more.group_size, more.refresh_interval) == (10, 2 * hp.refresh_interval)
    assert abs(more.num_groups * more.group_size - 256) <= more.group_size


def test_rollout_n_above_1_under_do_search_is_said_to_stop_search_r1():
    """Search-R1's multi-turn loop asserts one response per prompt copy (llm_agent's _example_level_pad), so rollout.n
    > 1 under do_search stops its run: said first, as a framework's own refusal; with do_search false it runs."""
    (line,) = read_run_config(search_r1(n_agent=5, n=5)).refused
    assert line.startswith("Search-R1 refuses this config") and "G = n_agent x n = 25" in line
    assert read_run_config(search_r1(n_agent=5, n=5, do_search=False)).refused == ()
    assert read_run_config(search_r1()).refused == ()


def test_search_r1s_own_keys_and_its_base_configs_defaults():
    """Search-R1's own keys (a14dc3a's ppo_trainer.yaml: retriever, agent loop, format reward) are read as its, not
    refused; state_masking and no_think_rl are named as not modelled; where its base config differs from verl 0.9.1's
    on a key the mapping reads, its own default is taken and said: entropy_coeff 0.001, no dual clip (verl 0.1's loss),
    a KL in the reward where use_kl_loss is false."""
    cfg = search_r1() | {"max_turns": 4, "retriever": {"url": "http://127.0.0.1:8000/retrieve", "topk": 3}}
    cfg["data"] |= {"max_start_length": 2048, "max_obs_length": 500, "shuffle_train_dataloader": True}
    cfg["actor_rollout_ref"]["actor"]["state_masking"] = True
    cfg["algorithm"] |= {"no_think_rl": False, "state_masking": {"start_state_marker": "<information>",
                                                                "end_state_marker": "</information>"}}
    setup = read_run_config(cfg)
    assert not setup.unknown and setup.hparams.ratio_cap is None
    named = {key: value for key, value, _ in setup.unmodelled}
    assert named["actor_rollout_ref.actor.state_masking"] is True and "algorithm.no_think_rl" not in named
    assert named["actor_rollout_ref.actor.entropy_coeff"] == 0.001
    notes = " | ".join(setup.notes)
    assert "0.001, the default of Search-R1's trainer" in notes and "no dual clip: Search-R1's trainer" in notes
    assert "puts a KL penalty in the reward where use_kl_loss is false" in notes
    cfg["actor_rollout_ref"]["actor"] |= {"use_kl_loss": True, "kl_loss_coef": 0.001, "clip_ratio_c": 3.0,
                                          "entropy_coeff": 0}
    given = read_run_config(cfg)
    assert given.hparams.ratio_cap == 3.0 and given.hparams.kl_coef == 0.001
    assert "KL penalty in the reward" not in " | ".join(given.notes)
    assert "actor_rollout_ref.actor.entropy_coeff" not in {k for k, _, _ in given.unmodelled}


def test_a_plain_verl_config_keeps_verls_defaults():
    tree = search_r1()
    tree["actor_rollout_ref"]["rollout"] = {"n": 8}
    setup = read_run_config(tree)
    assert setup.hparams.ratio_cap == 3.0 and "Search-R1" not in " | ".join(setup.notes)
    assert "actor_rollout_ref.actor.entropy_coeff" not in {k for k, _, _ in setup.unmodelled}
    with pytest.raises(ConfigError, match="max_turn"):  # a key of Search-R1's misspelt is still refused
        read_run_config(search_r1() | {"max_turn": 4})
