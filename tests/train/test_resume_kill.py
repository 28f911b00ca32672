"""A real `gspo-dynamics train` process killed with SIGKILL after a checkpoint, then resumed,
reproduces the uninterrupted run exactly on the CPU: final parameters and every metric row, bit for bit.
For the built-in model and for an hf:DIR Llama config on the native path (needs transformers)."""

import json
import signal
import subprocess
import sys
import time

import pytest
import torch
from _train_helpers import cli_env, config_file, final_parameters, read_rows, run_cli, tiny_config

from gspo_dynamics.logs import read_log

STEPS = 16


def _rows_written(out) -> int:
    try:
        return sum(1 for line in (out / "metrics.jsonl").read_text().splitlines(keepends=True) if line.endswith("\n"))
    except FileNotFoundError:
        return 0


def _model(kind, directory) -> dict:
    if kind == "builtin":
        return {}
    transformers = pytest.importorskip("transformers")
    from gspo_dynamics.train.tokenizer import Tokenizer

    transformers.LlamaConfig(vocab_size=Tokenizer().vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64
                             ).save_pretrained(directory / "llama")
    return {"model": f"hf:{directory / 'llama'}"}


# three processes each (~10 s of CPU): the built-in model in the default run; the hf:DIR Llama on the native path is
# slow (its in-process state round trip: tests/train/test_hf_native.py)
@pytest.mark.parametrize("kind", ["builtin", pytest.param("hf-native", marks=pytest.mark.slow)])
def test_killed_and_resumed_run_equals_the_uninterrupted_run(tmp_path, kind):
    # T = 2 (two minibatches per rollout), checkpoints every 2 steps, KL reference, SGD momentum
    config = tiny_config(tmp_path, **_model(kind, tmp_path), steps=STEPS, steps_per_generation=2, checkpoint_every=2, kl_coef=0.05,
                         optimizer="sgd", momentum=0.9, lr=0.05, warmup_steps=10, warmup_lr=5e-2)
    path = config_file(tmp_path, config)
    whole, broken = tmp_path / "whole", tmp_path / "broken"

    command = [sys.executable, "-m", "gspo_dynamics.cli.main", "train", "--config", path, "--no-progress", "--out"]
    # the uninterrupted run and the one to kill run side by side (one thread each)
    uninterrupted = subprocess.Popen([*command, str(whole)], env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    killed = subprocess.Popen([*command, str(broken)], env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not ((broken / "checkpoint.pt").exists() and _rows_written(broken) >= 3):
        assert killed.poll() is None, f"the run ended before it could be killed: {killed.stderr.read()}"
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.01)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    assert uninterrupted.wait(timeout=300) == 0, uninterrupted.stderr.read()
    done = torch.load(broken / "checkpoint.pt", weights_only=True)["step"]
    assert 0 < done < STEPS, done

    proc = run_cli(["train", "--out", str(broken), "--resume", "--no-progress"])  # settings from config.json
    assert proc.returncode == 0, proc.stderr

    expected, got = final_parameters(whole), final_parameters(broken)
    assert expected.keys() == got.keys()
    for name in expected:
        assert torch.equal(expected[name], got[name]), name
    assert read_rows(broken) == read_rows(whole)  # every float identical
    assert len(read_rows(broken)) == STEPS
    assert sum(r["grad_norm"] > 0 for r in read_rows(whole)) >= STEPS // 2  # the run did learn something
    state = json.loads((broken / "trainer_state.json").read_text())
    assert state["global_step"] == STEPS and state["log_history"] == read_rows(whole)
    assert state["model"]["backend"] == ("builtin" if kind == "builtin" else "native")
    log = read_log(broken / "trainer_state.json")
    assert list(log.steps) == list(range(1, STEPS + 1)) and not any("duplicate" in w for w in log.warnings)
