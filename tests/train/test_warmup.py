"""The supervised cold start: reaches the success band, measures honestly, refuses bad options."""

import pytest
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train.model import ModelConfig, build_model
from gspo_dynamics.train.rollout import completion_log_probs
from gspo_dynamics.train.tasks import make_task
from gspo_dynamics.train.tokenizer import Tokenizer
from gspo_dynamics.train.warmup import reference_batch, success_rate, supervised_warmup

TOK = Tokenizer()


def small_model(seed=0):
    config = ModelConfig(vocab_size=TOK.vocab_size, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_seq_len=16)
    return build_model(config, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name, knobs", [("pattern", dict(length=3)), ("addition", dict(n_digits=1))])
def test_warmup_lifts_the_success_rate_from_zero_into_the_band(name, knobs):
    task = make_task(name, TOK, **knobs)
    model = small_model()
    start = success_rate(model, task, TOK, 200, torch.Generator().manual_seed(1))
    assert start < 0.05  # a random model almost never succeeds: RL alone would stall
    rate = supervised_warmup(model, task, TOK, steps=400, lr=3e-3, batch_size=32,
                             generator=torch.Generator().manual_seed(2), eval_every=5)
    assert 0.2 <= rate <= 0.8
    # an independent measurement on 400 fresh prompts: its sd is <= 0.025, the band's estimate
    # (64 samples) has sd <= 0.0625, so 0.2 - 3 x 0.07 > 0 and 0.8 + 0.21 < 1 leave it strictly inside (0, 1)
    check = success_rate(model, task, TOK, 400, torch.Generator().manual_seed(3))
    assert 0.0 < check < 1.0


def test_nothing_is_trained_when_the_start_is_already_in_the_band():
    task = make_task("pattern", TOK, length=3)
    model = small_model()
    before = [p.detach().clone() for p in model.parameters()]
    for kwargs in (dict(steps=50, target_success=(0.0, 1.0)), dict(steps=0)):
        supervised_warmup(model, task, TOK, lr=1e-2, batch_size=8, generator=torch.Generator().manual_seed(4), **kwargs)
        assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_reference_batch_is_laid_out_like_a_rollout():
    """Log-probs of the padded batch equal those of each row run alone without padding."""
    task = make_task("addition", TOK, n_digits=2)
    model = small_model().eval()
    prompts = ["01+02=", "99+99=", "50+50="]
    seqs, att, comp = reference_batch(task, TOK, prompts)
    with torch.no_grad():
        logp, _ = completion_log_probs(model, seqs, att, comp)
        for row, prompt in enumerate(prompts):
            alone = torch.tensor([TOK.encode(prompt + task.reference_completion(prompt), add_bos=True)])
            logits, _ = model(alone)
            n = len(task.reference_completion(prompt))
            ref = torch.log_softmax(logits[0, -n - 1 : -1], -1).gather(-1, alone[0, -n:, None])[:, 0]
            assert torch.allclose(logp[row, :n], ref, atol=1e-5)
            assert (logp[row, n:] == 0).all()


@pytest.mark.parametrize(
    "bad",
    [dict(steps=-1), dict(lr=0.0), dict(lr=float("inf")), dict(batch_size=0), dict(target_success=(0.8, 0.2)),
     dict(target_success=(0.1, 1.5)), dict(eval_every=0)],
)
def test_bad_warmup_options_are_config_errors(bad):
    options = {**dict(steps=1, lr=1e-3, batch_size=4), **bad}
    with pytest.raises(ConfigError):
        supervised_warmup(small_model(), make_task("pattern", TOK, length=2), TOK, **options)
