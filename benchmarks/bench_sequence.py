"""Benchmark: tokens per second of one GRPO step (rollout + update) of the tiny transformer on CPU,
batched over prompts and groups, against a naive one-sequence-at-a-time version of the same step.

One step, P prompts x G responses of L tokens (PatternMatch with partial credit, so rewards vary):

    rollout   y_i ~ pi_theta(. | x_i), keeping log pi_old(y_it);  r_i = reward(x_i, y_i)
    update    A = group_advantages(r (P, G));  logp = log pi_theta(y_it)  (teacher-forced)
              loss = grpo(logp, logp_old, A, mask);  loss.backward();  Adam step

Batched: one `sample` call for all B = P G sequences (KV cache, one (B, V) step per position),
one `log_probs` pass and one loss over (B, L). Naive: the same step one sequence at a time: each
token is drawn from a full teacher-forced forward pass over the prefix (batch 1, no KV cache), and
the update accumulates per-sequence backward passes of l_i / B (GRPO's batch mean, the same loss
math), then one Adam step. The advantages need the whole group in both versions.

Before timing, the script checks that the two agree (float32, the dtype timed):
  * rollout: the naive per-token full-forward log-probs of the batched sample's own tokens equal
    the cached sampler's log pi_old (the KV cache changes nothing but summation order);
  * update: on the same tokens and weights, the naive accumulated loss and every parameter's
    gradient equal the batched ones, relative to the largest gradient entry.

Rates are generated response tokens (B L per step) per second, best of --repeats after a warm-up
(fewer once a row has used --budget seconds), for rollout, update and the whole step, batched and
naive steps alternating so that both see the same load, at 1 torch thread and at torch's default
thread count. The naive step is timed on --naive-prompts whole groups: it loops over independent
sequences, so its cost per token does not depend on P. Run (1-3 minutes on 2 cores, with load):

    cd /work/main && .venv/bin/python benchmarks/bench_sequence.py

Prints one line per measurement and the markdown table, and replaces the section
"Sequence rollout + update throughput" of benchmarks/RESULTS.md (other sections are kept);
--no-write only prints.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import math
import os
import time
from dataclasses import dataclass
from typing import Callable

import torch
from _results import RESULTS, cpu_model, replace_section

from gspo_dynamics.objectives import get_loss, group_advantages
from gspo_dynamics.sim.sequence import PatternMatch, TinyTransformer, TransformerConfig, log_probs, sample

SECTION = "## Sequence rollout + update throughput"
COMMAND = "cd /work/main && .venv/bin/python benchmarks/bench_sequence.py"

D_MODEL, N_LAYERS, N_HEADS = 64, 2, 4  # the tiny transformer
CLIP_LOW, CLIP_HIGH = 0.2, 0.28  # GRPO's eps (DAPO's clip-higher pair); on-policy they never bite
LR = 1e-3  # Adam
# float32 rounding: the cached and uncached passes sum in different orders (~1e-7 per op, a few
# dozen ops deep), so 1e-5 on log-probs of size ~log 15 and relative to the largest gradient entry
LOGP_TOL = 1e-5
GRAD_RTOL = 1e-5
CHECK_SEQUENCES = 16  # sequences the (slow) naive rollout check runs over
OFF_POLICY_STD = 0.3  # std of the log pi_old perturbation in the update check


@dataclass(frozen=True, kw_only=True)
class Setting:
    """One benchmarked step size."""

    prompts: int  # P, prompts per step
    group_size: int  # G, responses per prompt
    length: int  # L, response tokens

    @property
    def batch(self) -> int:
        return self.prompts * self.group_size

    @property
    def tokens(self) -> int:
        """Generated response tokens per step (PatternMatch has no EOS: every token is real)."""
        return self.batch * self.length


def make(setting: Setting, seed: int = 0):
    """(task, policy, Adam) for a setting, weights seeded."""
    task = PatternMatch(length=setting.length, partial_credit=True)
    config = TransformerConfig(
        vocab_size=task.vocab_size, d_model=D_MODEL, n_layers=N_LAYERS, n_heads=N_HEADS,
        max_len=task.prompt_len + setting.length,
    )
    policy = TinyTransformer(config, generator=torch.Generator().manual_seed(seed))
    return task, policy, torch.optim.Adam(policy.parameters(), lr=LR)


# ---- the batched step -----------------------------------------------------------------------------


def batched_rollout(task, policy, setting: Setting, generator: torch.Generator):
    """prompts (B, 1), tokens (B, L), logp_old (B, L), mask (B, L), rewards (P, G) in one `sample` call."""
    prompts = task.prompts(setting.batch)  # (B, 1), B = P G with group members adjacent
    tokens, logp_old, mask, _ = sample(policy, prompts, setting.length, generator, eos=task.eos)
    rewards = task.reward(prompts, tokens, mask).view(setting.prompts, setting.group_size)  # (P, G)
    return prompts, tokens, logp_old, mask, rewards


def batched_loss(policy, prompts, tokens, logp_old, mask, rewards, metrics: dict | None = None) -> torch.Tensor:
    advantages = group_advantages(rewards).reshape(-1)  # (B,)
    logp = log_probs(policy, prompts, tokens, mask)  # (B, L)
    loss, found = get_loss("grpo")(logp, logp_old, advantages, mask, clip_low=CLIP_LOW, clip_high=CLIP_HIGH)
    if metrics is not None:
        metrics.update(found)
    return loss


def batched_update(policy, optimizer, rollout) -> torch.Tensor:
    optimizer.zero_grad(set_to_none=True)
    loss = batched_loss(policy, *rollout)
    loss.backward()
    optimizer.step()
    return loss.detach()


# ---- the naive step -------------------------------------------------------------------------------


@torch.no_grad()
def next_logits(policy, prompt: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
    """(1, V) logits of the token after `prefix` (1, t): a full teacher-forced pass, no cache.

    The policy's forward predicts every token of a response from its inputs (prompt + all but
    the last token), so a placeholder appended to the prefix makes its last output the next token's.
    """
    placeholder = prefix.new_zeros(1, 1)
    logits, _ = policy(prompt, torch.cat([prefix, placeholder], dim=1))  # (1, t + 1, V)
    return logits[:, -1]


def naive_rollout(task, policy, setting: Setting, generator: torch.Generator):
    """The batched rollout's outputs, built one sequence and one token at a time."""
    prompts = task.prompts(setting.batch)
    rows, logps = [], []
    for i in range(setting.batch):
        prompt = prompts[i : i + 1]  # (1, 1)
        prefix = prompts.new_empty(1, 0)  # (1, t)
        logp = []
        for _ in range(setting.length):
            log_dist = torch.log_softmax(next_logits(policy, prompt, prefix), dim=-1)  # (1, V)
            token = torch.multinomial(log_dist.exp(), 1, generator=generator)  # (1, 1)
            logp.append(log_dist[0, token[0, 0]])
            prefix = torch.cat([prefix, token], dim=1)
        rows.append(prefix)
        logps.append(torch.stack(logp))
    tokens, logp_old = torch.cat(rows), torch.stack(logps)  # (B, L) each
    mask = torch.ones_like(tokens, dtype=torch.bool)  # no EOS in PatternMatch
    rewards = task.reward(prompts, tokens, mask).view(setting.prompts, setting.group_size)
    return prompts, tokens, logp_old, mask, rewards


def naive_accumulate(policy, prompts, tokens, logp_old, mask, rewards) -> torch.Tensor:
    """Per-sequence forward/backward of l_i / B into .grad; returns the summed loss (GRPO's batch mean)."""
    advantages = group_advantages(rewards).reshape(-1)  # (B,) needs whole groups
    B = tokens.shape[0]
    grpo = get_loss("grpo")
    total = torch.zeros(())
    for i in range(B):
        one = slice(i, i + 1)
        logp = log_probs(policy, prompts[one], tokens[one], mask[one])  # (1, L)
        loss_i, _ = grpo(logp, logp_old[one], advantages[one], mask[one], clip_low=CLIP_LOW, clip_high=CLIP_HIGH)
        (loss_i / B).backward()
        total += loss_i.detach() / B
    return total


def naive_update(policy, optimizer, rollout) -> torch.Tensor:
    optimizer.zero_grad(set_to_none=True)
    loss = naive_accumulate(policy, *rollout)
    optimizer.step()
    return loss


# ---- checks ---------------------------------------------------------------------------------------


def check(setting: Setting) -> dict[str, float]:
    """Max |difference| of the naive and batched step on the same tokens and weights."""
    task, policy, _ = make(setting)
    rollout = batched_rollout(task, policy, setting, torch.Generator().manual_seed(1))
    prompts, tokens, logp_old, _, _ = rollout
    logp_diff = 0.0
    for i in range(min(CHECK_SEQUENCES, setting.batch)):  # the naive sampler's path, forced to the same tokens
        for t in range(setting.length):
            log_dist = torch.log_softmax(next_logits(policy, prompts[i : i + 1], tokens[i : i + 1, :t]), dim=-1)
            logp_diff = max(logp_diff, abs(log_dist[0, tokens[i, t]].item() - logp_old[i, t].item()))

    # an off-policy pi_old, so ratios differ from 1, the loss is not 0 and the clip bites
    noise = torch.randn(logp_old.shape, generator=torch.Generator().manual_seed(3))
    rollout = (*rollout[:2], logp_old + OFF_POLICY_STD * noise, *rollout[3:])
    twin = copy.deepcopy(policy)
    policy.zero_grad(set_to_none=True)
    found: dict = {}
    loss_batched = batched_loss(policy, *rollout, metrics=found)
    loss_batched.backward()
    twin.zero_grad(set_to_none=True)
    loss_naive = naive_accumulate(twin, *rollout)
    grads = [(p.grad, q.grad) for p, q in zip(policy.parameters(), twin.parameters())]
    scale = max(g.abs().max().item() for g, _ in grads)
    grad_diff = max((g - h).abs().max().item() for g, h in grads) / scale
    return dict(logp=logp_diff, loss=abs(loss_batched.item() - loss_naive.item()), grad=grad_diff,
                loss_value=loss_batched.item(), grad_scale=scale,
                clip_frac=found["losses/clip_frac"].item())


# ---- timing ---------------------------------------------------------------------------------------


def timed_step(rollout_fn: Callable, update_fn: Callable) -> tuple[float, float, float]:
    """(rollout, update, step) seconds of one step."""
    t0 = time.perf_counter()
    rollout = rollout_fn()
    t1 = time.perf_counter()
    update_fn(rollout)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, t2 - t0


def measure(
    setting: Setting, threads: int, *, repeats: int, naive_repeats: int, naive_prompts: int, budget: float
) -> dict:
    """Batched and naive rates in generated tokens / s; the naive step runs on `naive_prompts` of the
    P prompts (whole groups): its cost per token does not depend on the batch, it loops over it.
    Repeats stop early once `budget` seconds have passed and each version has one timed step."""
    small = dataclasses.replace(setting, prompts=min(naive_prompts, setting.prompts))
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        task, policy, optimizer = make(setting)
        task_n, policy_n, optimizer_n = make(small)
        generator = torch.Generator().manual_seed(2)
        batched, naive = [math.inf] * 3, [math.inf] * 3
        counts = dict(batched=0, naive=0)
        start = time.perf_counter()
        # best of repeats after one warm-up step (allocator, thread pool, autograd first calls); the
        # two versions alternate so that both see the same load from other processes; each step
        # continues from the previous one's weights, as training does
        for r in range(max(repeats, naive_repeats) + 1):
            if r >= 2 and time.perf_counter() - start > budget:
                break
            if r <= repeats:
                t = timed_step(lambda: batched_rollout(task, policy, setting, generator),
                               lambda ro: batched_update(policy, optimizer, ro))
                batched = [min(x, y) for x, y in zip(batched, t)] if r else batched
                counts["batched"] += r > 0
            if r <= naive_repeats:
                t = timed_step(lambda: naive_rollout(task_n, policy_n, small, generator),
                               lambda ro: naive_update(policy_n, optimizer_n, ro))
                naive = [min(x, y) for x, y in zip(naive, t)] if r else naive
                counts["naive"] += r > 0
    finally:
        torch.set_num_threads(previous)
    rates = dict(batched=[setting.tokens / s for s in batched], naive=[small.tokens / s for s in naive])
    row = dict(setting=setting, threads=threads, **rates, counts=counts, seconds=dict(batched=batched, naive=naive))
    b, n = rates["batched"], rates["naive"]
    print(f"P={setting.prompts} G={setting.group_size} L={setting.length} threads={threads}: "
          f"batched rollout {b[0]:,.0f} / update {b[1]:,.0f} / step {b[2]:,.0f} tok/s "
          f"({batched[2] * 1e3:.0f} ms/step); naive {n[0]:,.0f} / {n[1]:,.0f} / {n[2]:,.0f} tok/s "
          f"({naive[2]:.2f} s/step of {small.batch} sequences); best of {counts['batched']} / {counts['naive']}; "
          f"ratio {b[0] / n[0]:.0f}x / {b[1] / n[1]:.0f}x / {b[2] / n[2]:.0f}x")
    return row


# ---- report ---------------------------------------------------------------------------------------


def machine(default_threads: int) -> str:
    model = cpu_model()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{model}, {os.cpu_count()} cores, torch {torch.__version__} (default {default_threads} threads), "
            f"float32, {datetime.date.today().isoformat()}, load average (1, 5, 15 min) {load} at the start")


def table(rows) -> list[str]:
    lines = [
        "| P x G x L | torch threads | timed steps (batched / naive) | batched rollout | batched update | "
        "batched step | naive rollout | naive update | naive step | ratio rollout | ratio update | ratio step |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s, b, n = r["setting"], r["batched"], r["naive"]
        lines.append(
            f"| {s.prompts} x {s.group_size} x {s.length} | {r['threads']} | "
            f"{r['counts']['batched']} / {r['counts']['naive']} | "
            + " | ".join(f"{x:,.0f}" for x in (*b, *n))
            + " | " + " | ".join(f"{x / y:,.0f}x" for x, y in zip(b, n)) + " |"
        )
    return lines


def write_results(rows, checks: str, host: str, end_load: str, args) -> None:
    body = "\n".join([
        SECTION,
        "",
        f"One GRPO step of `TinyTransformer` (d_model {D_MODEL}, {N_LAYERS} layers, {N_HEADS} heads, vocabulary 15) on",
        "`PatternMatch(partial_credit=True)` (one-token prompt, no EOS): rollout = sample G responses of L tokens",
        "for each of P prompts and score them; update = group advantages, teacher-forced log-probs, `grpo` loss,",
        "backward, Adam step. Batched: one `sample` call for all P x G sequences (preallocated KV cache), one",
        "`log_probs` pass and one loss. Naive: one sequence at a time, each token drawn from a full forward pass",
        "over its prefix (batch 1, no KV cache), and per-sequence forward/backward of l_i / B accumulated before",
        "one Adam step. Rates in generated response tokens per second (P x G x L per step), best of up to",
        f"{args.repeats} steps after one warm-up step (fewer once a row has run {args.budget:g} s; the table says how "
        "many),",
        "`time.perf_counter`, batched and naive steps alternating so that both see the same load; the best",
        "rollout, update and step are taken separately, so a step rate can exceed the one its two parts imply.",
        f"The naive step is timed on {args.naive_prompts} of the P prompts ({args.naive_prompts} x G sequences, "
        "whole groups, full rollout + update):",
        "it loops over independent sequences, so its cost per token does not depend on P, and the full batch",
        "would take seconds to minutes per step.",
        "",
        *table(rows),
        "",
        f"Machine: {host}; {end_load} at the end. The machine is shared with other processes (see the load",
        "average), so rates vary by tens of percent between runs, and more with 2 threads: when other processes",
        "hold the cores, torch's thread pool waits on threads that are not running and a 2-thread step can be",
        "several times slower than a 1-thread one. Rows with 1 thread are the ones to compare across runs.",
        "",
        "Correctness checks run by the script before timing (float32, the timed dtype): " + checks + ".",
        "",
        "Command:",
        "",
        f"    {COMMAND}",
        "",
    ])
    replace_section(SECTION, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16, help="P, prompts per step")
    parser.add_argument("--group-size", type=int, default=8, help="G, responses per prompt")
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 128], help="L, response tokens (one row each)")
    parser.add_argument("--repeats", type=int, default=5, help="timed batched steps")
    parser.add_argument("--naive-repeats", type=int, default=5, help="timed naive steps")
    parser.add_argument("--naive-prompts", type=int, default=1,
                        help="prompts (whole groups of G) the naive step is timed on; its cost per token is P-free")
    parser.add_argument("--budget", type=float, default=15.0,
                        help="seconds per row after which repeats stop (once each version has a timed step)")
    parser.add_argument("--threads", type=int, nargs="+", default=None,
                        help="torch thread counts to run (default: 1 and torch's default)")
    parser.add_argument("--no-write", action="store_true", help=f"print only; leave {RESULTS.name} alone")
    args = parser.parse_args()
    default_threads = torch.get_num_threads()
    threads = args.threads or sorted({1, default_threads})
    host = machine(default_threads)  # before the work, so the load average is other processes' alone
    settings = [Setting(prompts=args.prompts, group_size=args.group_size, length=L) for L in args.lengths]

    t0 = time.perf_counter()
    torch.set_num_threads(1)
    results = [(s, check(s)) for s in settings]
    torch.set_num_threads(default_threads)
    for s, c in results:
        print(f"check L={s.length}: naive vs cached log pi_old max |d| {c['logp']:.1e} (tol {LOGP_TOL:g}); "
              f"loss {c['loss_value']:.6f}, |d| {c['loss']:.1e}; grad max |d| / max |g| {c['grad']:.1e} "
              f"(tol {GRAD_RTOL:g}, max |g| {c['grad_scale']:.1e}); clip fraction {c['clip_frac']:.2f}")
    if not all(c["logp"] <= LOGP_TOL and c["loss"] <= LOGP_TOL and c["grad"] <= GRAD_RTOL for _, c in results):
        raise SystemExit("the naive and batched steps disagree; not timing")
    checks = "; ".join(
        f"L = {s.length}: the naive per-token full-forward log-probs of the batched sample's tokens match the "
        f"cached sampler's log pi_old to {c['logp']:.0e} ({min(CHECK_SEQUENCES, s.batch)} sequences, tol "
        f"{LOGP_TOL:g}); on the same tokens and weights, with log pi_old perturbed by N(0, {OFF_POLICY_STD}^2) "
        f"noise (clip fraction {c['clip_frac']:.2f}), the accumulated naive loss matches the batched one "
        f"({c['loss_value']:.5f}) to {c['loss']:.0e} and every gradient entry to {c['grad']:.0e} of the largest "
        f"(tol {GRAD_RTOL:g})"
        for s, c in results
    )

    rows = [
        measure(s, n, repeats=args.repeats, naive_repeats=args.naive_repeats, naive_prompts=args.naive_prompts,
                budget=args.budget)
        for s in settings for n in threads
    ]
    end_load = "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"total {time.perf_counter() - t0:.1f}s; rows for {RESULTS.name} ({host}; {end_load} at the end):")
    print("\n".join(table(rows)))
    if not args.no_write:
        write_results(rows, checks, host, end_load, args)


if __name__ == "__main__":
    main()
