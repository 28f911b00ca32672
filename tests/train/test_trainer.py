"""The training loop: TRL's schedule and metric names, logs that `read_log` reads as TRL's, and
each formula of the update checked by an independent route (a per-sequence loop, another module)."""

import copy
import dataclasses
import json
import math

import pytest
import torch
from _train_helpers import tiny_config

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import read_log
from gspo_dynamics.objectives import get_loss
from gspo_dynamics.train import _metrics as M
from gspo_dynamics.train import build_model, preset_config
from gspo_dynamics.train._distributed import World
from gspo_dynamics.train._step import forward_logprobs, merge, update
from gspo_dynamics.train.rollout import completion_log_probs
from gspo_dynamics.train.tokenizer import Tokenizer
from gspo_dynamics.train.trainer import _Run, resolve_model_config, train

TRL_NAMES = ("reward", "reward_std", "frac_reward_zero_std", "entropy", "kl", "clip_ratio/low_mean",
             "clip_ratio/high_mean", "clip_ratio/region_mean", "completions/mean_length", "completions/clipped_ratio",
             "grad_norm", "learning_rate", "rewards/pattern/mean", "rewards/pattern/std", "num_tokens", "epoch", "step")
OURS = ("ratios/token_log_mean", "ratios/seq_log_var", "mismatch/logp_abs_mean", "mismatch/k3", "losses/ratio_std",
        "losses/clip_frac", "groups/reward_std_mean", "window/position")
# float32 forward passes of the same numbers in a different batch layout (padding, batch size)
# differ by summation order only: ~1e-7 relative; 1e-5 leaves a wide margin and is far below any real error.
LAYOUT_TOL = 1e-5
# the update checked against a loop oracle: the same float32 maths in another order
UPDATE_TOL = 1e-6


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """T = steps_per_generation x num_iterations = 2 x 2 = 4; 8 steps (two rollouts), KL on, linear lr."""
    torch.set_num_threads(1)
    directory = tmp_path_factory.mktemp("trainer")
    config = tiny_config(directory, steps=8, steps_per_generation=2, num_iterations=2, kl_coef=0.05,
                         lr_schedule="linear")
    return config, train(config, directory / "out")


def test_every_step_logs_trl_names_and_ours(run):
    _, result = run
    assert len(result.rows) == 8
    for row in result.rows:
        assert set(TRL_NAMES + OURS) <= row.keys()
        for name in ("clip_ratio/low_mean", "clip_ratio/high_mean", "frac_reward_zero_std", "completions/clipped_ratio"):
            assert 0.0 <= row[name] <= 1.0
        assert row["rewards/pattern/mean"] == row["reward"]


def test_schedule_is_trls(run):
    """Step t uses minibatch (t mod T) mod steps_per_generation of the rollout drawn at t = 0 mod T:
    the second iteration (j = 2, 3) re-uses the rewards of the first (j = 0, 1), tokens are counted
    once per rollout, and at j = 0 the policy is the sampler (every ratio exactly 1)."""
    config, result = run
    rows = result.rows
    assert [r["window/position"] for r in rows] == [0, 1, 2, 3, 0, 1, 2, 3]
    for start in (0, 4):
        assert rows[start + 2]["reward"] == rows[start]["reward"]
        assert rows[start + 3]["reward"] == rows[start + 1]["reward"]
        assert rows[start]["ratios/token_log_mean"] == 0.0 and rows[start]["losses/ratio_mean"] == 1.0
        assert len({r["num_tokens"] for r in rows[start:start + 4]}) == 1
    assert rows[4]["num_tokens"] > rows[0]["num_tokens"] > 0
    assert [r["step"] for r in rows] == list(range(1, 9))
    assert [r["epoch"] for r in rows] == [t / 8 for t in range(1, 9)]
    assert [r["learning_rate"] for r in rows] == pytest.approx([config.lr * (1 - t / 8) for t in range(8)], rel=1e-12)


def test_trainer_state_is_read_as_a_trl_log(run):
    config, result = run
    state = json.loads((result.out_dir / "trainer_state.json").read_text())
    assert state["global_step"] == 8 and state["max_steps"] == 8 and len(state["log_history"]) == 8
    log = read_log(result.out_dir / "trainer_state.json")
    assert log.format == "trl_state" and log.trainer == "trl"
    assert list(log.steps) == list(range(1, 9))
    assert list(log["reward"]) == pytest.approx([r["reward"] for r in result.rows])
    assert list(log["clip_frac"]) == pytest.approx([r["clip_ratio/region_mean"] for r in result.rows])
    assert list(log["kl_ref"]) == pytest.approx([r["kl"] for r in result.rows])
    jsonl = read_log(result.out_dir / "metrics.jsonl")  # the JSONL reader agrees
    assert list(jsonl["reward"]) == pytest.approx(list(log["reward"]))


# ---- the pieces of one update, by independent routes ----------------------------------------------------


@pytest.fixture(scope="module")
def rollout(tmp_path_factory):
    """A scored rollout buffer of a warmed-up tiny model (4 prompts x G = 4), pi_old computed at the rollout
    (as for T > 1; on-policy the run leaves it to the update's forward)."""
    torch.set_num_threads(1)
    config = tiny_config(tmp_path_factory.mktemp("parts"), steps=1, kl_coef=0.1)
    r = _Run(config, tmp_path_factory.mktemp("out"), World(), torch.device("cpu"), 1, resume=False)
    r.log.close()
    r.on_policy = False
    return r, r.rollout(0)


def test_logprobs_and_entropy_by_another_route(rollout):
    r, buf = rollout
    logp, entropy, _ = forward_logprobs(r.model, buf, 1.0, False, r.autocast)
    reference, _ = completion_log_probs(r.model, buf.sequences, buf.attention_mask, buf.completion_mask)
    assert torch.equal(logp, reference)
    assert torch.equal(buf.logp_old, logp.detach())  # pi_old recomputed by the training model
    P = buf.sequences.shape[1] - buf.completion_mask.shape[1]
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(buf.sequences.shape[0]):  # one row at a time, no padding on the right
            n = int(buf.completion_mask[i].sum())
            logits, _ = r.model(buf.sequences[i:i + 1, : P + n], attention_mask=buf.attention_mask[i:i + 1, : P + n])
            for t in range(n):
                p = torch.softmax(logits[0, P + t - 1].double(), -1)
                total += float(-(p * p.log()).sum())
                count += 1
    assert float(entropy) == pytest.approx(total / count, rel=LAYOUT_TOL)
    assert float(M.mismatch_metrics(buf.logp_sampler, buf.logp_old, buf.mask)["mismatch/logp_abs_mean"]) < 1e-5


def test_merge_repads_without_changing_any_row(rollout):
    """Two chunks merged and reordered give each row the log-probs it had alone."""
    r, buf = rollout
    G = 4
    a, b = buf.rows(slice(0, 2 * G)), buf.rows(slice(2 * G, 4 * G))
    a = dataclasses.replace(a, completion_mask=a.completion_mask[:, :-1], logp_sampler=a.logp_sampler[:, :-1],
                            sequences=a.sequences[:, :-1], attention_mask=a.attention_mask[:, :-1])  # a narrower chunk
    order = torch.tensor([*range(2 * G, 4 * G), *range(0, 2 * G)])
    merged = merge([a, b], order, Tokenizer().pad_id)
    assert merged.sequences.shape[1] == buf.sequences.shape[1]
    alone_b, alone_a = (forward_logprobs(r.model, x, 1.0, False, r.autocast)[0].detach() for x in (b, a))
    joint = forward_logprobs(r.model, merged, 1.0, False, r.autocast)[0].detach()
    assert torch.equal(merged.rewards, torch.cat([b.rewards, a.rewards]))
    assert torch.allclose(joint[:2 * G], alone_b, atol=LAYOUT_TOL)
    assert torch.allclose(joint[2 * G:, :-1], alone_a, atol=LAYOUT_TOL)
    assert not joint[2 * G:, -1].any()  # the narrower chunk's completions are padded on the right


def _loop_loss(model, buf, beta, eps=(0.2, 0.28)):
    """GRPO + beta k3, one sequence at a time, written out from the papers' formulas."""
    P = buf.sequences.shape[1] - buf.completion_mask.shape[1]
    B = buf.sequences.shape[0]
    total = 0.0
    for i in range(B):
        n = int(buf.completion_mask[i].sum())
        logits, _ = model(buf.sequences[i:i + 1, : P + n], attention_mask=buf.attention_mask[i:i + 1, : P + n])
        terms, kls = [], []
        for t in range(n):
            logp = torch.log_softmax(logits[0, P + t - 1], -1)[buf.sequences[i, P + t]]
            w = torch.exp(logp - buf.logp_old[i, t])
            A = buf.advantages[i]
            terms.append(-torch.minimum(w * A, torch.clamp(w, 1 - eps[0], 1 + eps[1]) * A))
            d = buf.logp_ref[i, t] - logp
            kls.append(torch.exp(d) - 1 - d)
        total = total + torch.stack(terms).mean() + beta * torch.stack(kls).mean()
    return total / B


def test_one_sgd_step_equals_the_loop_oracle(rollout):
    """theta' = theta - lr grad(loss) with loss from `_loop_loss` (plain SGD, no clipping)."""
    r, buf = rollout
    model = copy.deepcopy(r.model)
    with torch.no_grad():  # move away from pi_old so that ratios and the KL are not trivial
        for p in model.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    oracle = copy.deepcopy(model)
    lr = 0.1
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    m = update(model, buf, loss_fn=get_loss("grpo"), loss_kwargs={"clip_low": 0.2, "clip_high": 0.28},
               objective="grpo", kl_coef=0.1, temperature=1.0, replay=False, sampler_params=None,
               optimizer=optimizer, max_grad_norm=None, world=World(), autocast=r.autocast)
    loss = _loop_loss(oracle, buf, 0.1)
    loss.backward()
    for (name, p), q in zip(model.named_parameters(), oracle.parameters()):
        assert torch.allclose(p, q.detach() - lr * q.grad, atol=UPDATE_TOL), name
    norm = torch.linalg.vector_norm(torch.stack([q.grad.norm() for q in oracle.parameters()]))
    assert float(m["grad_norm"]) == pytest.approx(float(norm), rel=1e-4)
    assert float(m["kl"]) > 0


def test_pg_takes_its_gradient_at_the_sampler(rollout):
    """No off-policy correction: the stale rollout's gradient, evaluated at the sampling weights."""
    r, buf = rollout
    sampler = copy.deepcopy(r.model)
    model = copy.deepcopy(r.model)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05)
    params = {n: p.detach().clone().requires_grad_(True) for n, p in sampler.named_parameters()}
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    update(model, buf, loss_fn=get_loss("pg"), loss_kwargs={"clip_low": 0.2, "clip_high": 0.2}, objective="pg",
           kl_coef=0.0, temperature=1.0, replay=False, sampler_params=params,
           optimizer=torch.optim.SGD(model.parameters(), lr=1.0), max_grad_norm=None, world=World(), autocast=r.autocast)
    logp, _, _ = forward_logprobs(sampler, buf, 1.0, False, r.autocast)
    loss, _ = get_loss("pg")(logp, buf.logp_old, buf.advantages, buf.mask, clip_low=0.2, clip_high=0.2)
    loss.backward()
    for (name, p), q in zip(model.named_parameters(), sampler.parameters()):
        assert torch.allclose(before[name] - p.detach(), q.grad, atol=UPDATE_TOL), name


@pytest.mark.parametrize("fields", [dict(objective="grpo", kl_coef=0.05), dict(objective="gspo", moe=True,
                                                                             routing_replay="experts")])
def test_on_policy_runs_skip_the_pi_old_forward_and_log_the_same_numbers(tmp_path, monkeypatch, fields):
    """T = 1 on a dropout-free model: no pi_old forward at the rollout (`score(old=False)`); the update's own
    log-probs, detached, are pi_old. Its forward computes the same float32 numbers as that pass (same weights, same
    batch layout), so every logged number is the one the run with the pi_old forward logs, exactly; and a model
    with dropout keeps the forward."""
    from gspo_dynamics.train import _step, trainer

    config = tiny_config(tmp_path, steps=4, **fields)
    calls = []
    real_forward = _step.forward_logprobs
    monkeypatch.setattr(_step, "forward_logprobs", lambda *a, **k: calls.append(1) or real_forward(*a, **k))
    skipped = train(config, tmp_path / "skipped").rows
    skipped_calls = len(calls)
    monkeypatch.setattr(trainer, "dropout_free", lambda model: False)
    calls.clear()
    kept = train(config, tmp_path / "kept").rows
    assert len(calls) - skipped_calls == 4  # one pi_old pass a rollout, only in the second run
    assert skipped == kept
    assert _step.dropout_free(build_model(preset_config("100k", 16)))
    assert not _step.dropout_free(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1)))
    assert not _step.dropout_free(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout1d(0.1)))
    assert not _step.dropout_free(torch.nn.Sequential(torch.nn.AlphaDropout(0.1)))
    assert not _step.dropout_free(build_model(preset_config("100k", 16, dropout=0.1)))
    for key in ("layerdrop", "hidden_dropout", "activation_dropout", "router_jitter_noise"):  # Hugging Face configs' keys
        module = torch.nn.Linear(2, 2)
        module.config = dataclasses.make_dataclass("Config", [(key, float), ("use_cache", bool)])(0.5, True)
        assert not _step.dropout_free(module), key
        module.config = dataclasses.make_dataclass("Config", [(key, float), ("use_cache", bool)])(0.0, True)
        assert _step.dropout_free(module), key


def test_routing_churn_is_zero_on_policy_and_replay_runs(tmp_path):
    config = tiny_config(tmp_path, moe=True, steps=4, steps_per_generation=2, routing_replay="experts",
                         objective="gspo_token")
    rows = train(config, tmp_path / "out").rows
    assert [r["routing/churn"] for r in rows][0::2] == [0.0, 0.0]  # j = 0: nothing changed yet
    assert all(0.0 <= r["routing/churn"] <= 1.0 for r in rows)


def test_metric_helpers_against_loops():
    g = torch.Generator().manual_seed(0)
    logp, old = -torch.rand(3, 5, generator=g), -torch.rand(3, 5, generator=g)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=torch.bool)
    m = M.ratio_metrics(logp, old, mask)
    tokens = [float(logp[i, t] - old[i, t]) for i in range(3) for t in range(5) if mask[i, t]]
    seqs = [sum(float(logp[i, t] - old[i, t]) for t in range(5) if mask[i, t]) / int(mask[i].sum()) for i in range(3)]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    var = lambda xs: mean([(x - mean(xs)) ** 2 for x in xs])  # noqa: E731
    assert float(m["ratios/token_log_mean"]) == pytest.approx(mean(tokens), abs=1e-6)
    assert float(m["ratios/token_log_var"]) == pytest.approx(var(tokens), abs=1e-6)
    assert float(m["ratios/seq_log_mean"]) == pytest.approx(mean(seqs), abs=1e-6)
    assert float(m["ratios/seq_log_var"]) == pytest.approx(var(seqs), abs=1e-6)
    rewards = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 0.5]])
    r = M.reward_metrics(rewards, "t", "group")
    assert float(r["frac_reward_zero_std"]) == 0.5
    flat = [1.0, 1.0, 1.0, 0.0, 1.0, 0.5]  # TRL >= 0.27: the std of all the rewards (Bessel-corrected)
    assert float(r["reward_std"]) == pytest.approx(math.sqrt(sum((x - mean(flat)) ** 2 for x in flat) / 5))
    assert float(r["groups/reward_std_mean"]) == pytest.approx((0 + math.sqrt(((0 - .5) ** 2 + .25 + 0) / 2)) / 2)
    assert M.to_row({"a": torch.tensor(float("nan")), "b": 2}) == {"a": None, "b": 2}


@pytest.mark.parametrize("fields, needle", [
    ({"checkpoint_every": 3, "steps_per_generation": 2}, "multiple of the refresh interval"),
    ({"precision": "bf16"}, "needs a CUDA device"),
    ({"model": "huge"}, "neither a preset"),
    ({"routing_replay": "experts"}, "needs a built-in mixture-of-experts model"),
])
def test_impossible_setups_are_config_errors(tmp_path, fields, needle):
    with pytest.raises(ConfigError, match=needle):
        train(tiny_config(tmp_path, **fields), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_model_config_files(tmp_path):
    vocab = Tokenizer().vocab_size
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"preset": "100k", "n_experts": 4}))
    assert resolve_model_config(str(path), vocab).n_experts == 4
    path.write_text(json.dumps({"d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 8, "max_seq_len": 16}))
    assert resolve_model_config(str(path), vocab).d_model == 32
    for bad, needle in (({"preset": "100k", "width": 3}, "unknown model setting 'width'"),
                        ({"preset": "100k", "vocab_size": 3}, "vocab_size"), ([1], "one JSON object")):
        path.write_text(json.dumps(bad))
        with pytest.raises(ConfigError, match=needle):
            resolve_model_config(str(path), vocab)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_bf16_run(tmp_path):
    """bf16 autocast on CUDA: the run trains and the sampler/trainer mismatch is measured (nonzero)."""
    rows = train(tiny_config(tmp_path, device="cuda", steps=4), tmp_path / "out").rows
    assert all(math.isfinite(r["grad_norm"]) for r in rows)
    assert rows[0]["mismatch/logp_abs_mean"] >= 0.0


@pytest.mark.slow
def test_compiled_training_matches_eager(tmp_path):
    """torch.compile (inductor; ~1 min to compile on a loaded CPU) fuses kernels, so sums are ordered
    differently: SGD (linear in the gradient, see test_ddp) keeps that at float32 rounding, 1e-5."""
    fields = dict(steps=2, optimizer="sgd", momentum=0.9, lr=0.1)
    eager = train(tiny_config(tmp_path, **fields), tmp_path / "eager")
    compiled = train(tiny_config(tmp_path, compile=True, **fields), tmp_path / "compiled")
    assert [r["reward"] for r in compiled.rows] == [r["reward"] for r in eager.rows]
    for name, value in eager.model.state_dict().items():
        assert torch.allclose(compiled.model.state_dict()[name], value, atol=1e-5), name


def test_hugging_face_model_from_a_local_config(tmp_path):
    """--model hf:DIR: a transformers model of a local config.json trains like the built-in one (a
    Llama config: on the native path, tests/train/test_trainer_hf.py), and resuming it checks its config."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=Tokenizer().vocab_size, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                      max_position_embeddings=64)
    config.save_pretrained(tmp_path / "llama")
    run = tiny_config(tmp_path, model=f"hf:{tmp_path / 'llama'}", steps=2, warmup_steps=5)
    result = train(run, tmp_path / "out")
    assert len(result.rows) == 2 and all(math.isfinite(r["grad_norm"]) for r in result.rows)
    assert result.backend == "native"
    assert result.rows[0]["ratios/token_log_mean"] == pytest.approx(0.0, abs=1e-6)
    resumed = train(dataclasses.replace(run, steps=3), tmp_path / "out", resume=True)
    assert [r["step"] for r in resumed.rows] == [1, 2, 3]
    with pytest.raises(ConfigError, match="vocab_size"):
        transformers.LlamaConfig(vocab_size=99, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                 num_attention_heads=2, max_position_embeddings=64).save_pretrained(tmp_path / "big")
        train(dataclasses.replace(run, model=f"hf:{tmp_path / 'big'}"), tmp_path / "other")


def test_moe_load_balance_term_adds_its_own_gradient(tmp_path):
    """theta(coef 0) - theta(coef c) = lr c grad(load_balance_loss) for one plain SGD step (the rest of
    the loss is the same), with the load-balance gradient taken straight from the model's forward."""
    torch.set_num_threads(1)
    config = tiny_config(tmp_path, moe=True, steps=1, objective="grpo")
    r = _Run(config, tmp_path / "out", World(), torch.device("cpu"), 1, resume=False)
    r.log.close()
    buf = r.rollout(0)
    lr, coef = 0.1, 0.5
    after = []
    for c in (0.0, coef):
        model = copy.deepcopy(r.model)
        m = update(model, buf, loss_fn=get_loss("grpo"), loss_kwargs={"clip_low": 0.2, "clip_high": 0.28},
                   objective="grpo", kl_coef=0.0, load_balance_coef=c, temperature=1.0, replay=False,
                   sampler_params=None, optimizer=torch.optim.SGD(model.parameters(), lr=lr), max_grad_norm=None,
                   world=World(), autocast=r.autocast)
        after.append(dict(model.named_parameters()))
    assert "losses/load_balance" in m and float(m["losses/load_balance"]) > 0
    oracle = copy.deepcopy(r.model)
    _, aux = oracle(buf.sequences, attention_mask=buf.attention_mask)
    aux["load_balance_loss"].backward()
    router_moved = False
    for name, q in oracle.named_parameters():
        g = torch.zeros_like(q) if q.grad is None else q.grad
        assert torch.allclose(after[0][name] - after[1][name], lr * coef * g, atol=UPDATE_TOL), name
        router_moved |= bool(g.abs().max() > 0)
    assert router_moved


def test_init_seed_sets_the_starting_checkpoint_and_seed_the_samples(tmp_path):
    """Runs that share init_seed start from the same warmed-up weights (init and warm-up drawn from it) and
    draw different rollouts (prompts and samples from `seed`); init_seed = None is `seed` (older runs)."""
    torch.set_num_threads(1)

    def start(name, **fields):
        r = _Run(tiny_config(tmp_path, steps=1, **fields), tmp_path / name, World(), torch.device("cpu"), 1, resume=False)
        r.log.close()
        return {k: v.clone() for k, v in r.model.state_dict().items()}, r.rollout(0)

    shared_a, buf_a = start("a", seed=1, init_seed=7)
    shared_b, buf_b = start("b", seed=2, init_seed=7)
    plain, _ = start("c", seed=7)
    own, _ = start("d", seed=1)
    for name, weight in shared_a.items():
        assert torch.equal(weight, shared_b[name]) and torch.equal(weight, plain[name])
    assert any(not torch.equal(w, own[k]) for k, w in shared_a.items())
    assert buf_a.sequences.shape != buf_b.sequences.shape or not torch.equal(buf_a.sequences, buf_b.sequences)
    with pytest.raises(ConfigError, match="init_seed"):
        tiny_config(tmp_path, init_seed=-1)


def test_a_non_finite_gradient_stops_the_update_before_its_step(rollout):
    """A loss whose gradient is nan (the KL of a policy far from its reference overflows the same way):
    `update` raises TrainingDiverged and no parameter changes (a step would write nan into all of them)."""
    from gspo_dynamics._errors import TrainingDiverged

    r, buf = rollout
    model = copy.deepcopy(r.model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    grpo = get_loss("grpo")

    def broken(*args, **kwargs):
        loss, m = grpo(*args, **kwargs)
        return loss * math.nan, m

    with pytest.raises(TrainingDiverged, match="gradient norm is nan.*the KL weight"):
        update(model, buf, loss_fn=broken, loss_kwargs={"clip_low": 0.2, "clip_high": 0.28}, objective="grpo",
               kl_coef=0.1, temperature=1.0, replay=False, sampler_params=None,
               optimizer=torch.optim.SGD(model.parameters(), lr=0.1), max_grad_norm=1.0, world=World(), autocast=r.autocast)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())


def test_a_diverged_run_keeps_its_log_and_says_where(tmp_path, monkeypatch):
    """The trainer's step 3 diverges: train raises one TrainingDiverged naming the step and the directory,
    carrying the two rows before it, which metrics.jsonl and trainer_state.json also hold (read as a TRL log)."""
    from gspo_dynamics._errors import TrainingDiverged
    from gspo_dynamics.train import trainer

    real = trainer.update
    calls = []

    def diverging(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise TrainingDiverged("the gradient norm is inf: the run diverged (lower the learning rate)")
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer, "update", diverging)
    out = tmp_path / "out"
    with pytest.raises(TrainingDiverged) as info:
        train(tiny_config(tmp_path), out)
    assert str(info.value).startswith("step 3 of 6: the gradient norm is inf") and str(out) in str(info.value)
    assert [row["step"] for row in info.value.rows] == [1, 2]
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
    assert len(read_log(str(out / "trainer_state.json"))["reward"]) == 2


def test_a_learning_rate_that_breaks_the_model_stops_the_run_with_its_log(tmp_path):
    """No patching: SGD at lr 1e30 without gradient clipping overflows the weights at step 1, so the rollout of
    step 2 draws from nan logits; the trainer refuses it (TrainingDiverged, not an index error in the sampler),
    keeps step 1's row and says how to go on. The error survives a trip through pickle (a worker pool) with its rows."""
    import pickle

    from gspo_dynamics._errors import TrainingDiverged

    out = tmp_path / "out"
    with pytest.raises(TrainingDiverged) as info:
        train(tiny_config(tmp_path, lr=1e30, optimizer="sgd", max_grad_norm=None), out)
    message = str(info.value)
    assert message.startswith("step 2 of 6: the sampling policy's log-probabilities are not finite")
    assert f"the metrics of steps 1-1 are in {out} (rerun with a new --out)" in message
    assert [row["step"] for row in info.value.rows] == [1]
    assert len(read_log(str(out / "trainer_state.json"))["reward"]) == 1
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == message and again.rows == info.value.rows
