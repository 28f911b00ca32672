"""The sequence tasks as text tasks for a language model: prompts and completions are strings.

The task logic (targets, rewards, difficulty knobs) is the sequence testbed's
(`gspo_dynamics.sim.sequence`: PatternMatch, CountParity, Addition); this module only turns
text into the testbed's tensors and back.

    task = make_task("addition", tokenizer, n_digits=2)
    prompts = task.sample_prompts(8, generator)          # ["12+34=", ...]
    rewards = task.reward(prompts, ["46$", ...])          # (8,) float32 in [0, 1]
    task.reference_completion("12+34=")                   # "46$" (the supervised cold start)

Every task ends its answer with EOS ("$"), so a completion that runs to `max_new_tokens`
without one is visibly truncated:

    pattern   prompt ""          answer: L tokens reproducing the target pattern, then EOS
    count     prompt ""          answer: L tokens with enough of a token, of a given parity, then EOS
    addition  prompt "ab+cd="    answer: the digits of the sum, then EOS

The reward reads the completion up to its first EOS. Pattern and count score at most L tokens
(fewer tokens, fewer chances to match); an answer longer than L, or one without EOS, earns 0.
Addition scores exactly as the testbed: the right digits followed by EOS.
"""

from __future__ import annotations

import torch

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.sequence import TOKENIZER as SIM_TOKENIZER, Addition, CountParity, PatternMatch
from gspo_dynamics.train.tokenizer import Tokenizer

TASKS: tuple[str, ...] = ("pattern", "count", "addition")
_SIM_CLASSES = {"pattern": PatternMatch, "count": CountParity, "addition": Addition}
_NEEDED = "0123456789+="  # characters every task writes
UNKNOWN = -1  # testbed id of a character outside its alphabet: matches no target


class TextTask:
    """A testbed task behind a text interface (module docstring); `sim` is the testbed task
    (exact expected rewards, targets)."""

    def __init__(self, name: str, sim, tokenizer: Tokenizer) -> None:
        self.name, self.sim, self.tokenizer = name, sim, tokenizer
        self._eos = tokenizer.eos_symbol
        # tokens the testbed reward reads (EOS included for addition), and the generation budget
        self._scored = sim.response_len
        self.max_new_tokens = sim.response_len + (1 if sim.eos is None else 0)

    def __repr__(self) -> str:
        return f"TextTask({self.name!r}, {self.sim!r})"

    # ---- prompts --------------------------------------------------------------------------------

    def sample_prompts(self, n: int, generator: torch.Generator | None = None) -> list[str]:
        """n prompt strings (without BOS; `Tokenizer.batch_encode` adds it)."""
        positive_int("the number of prompts", n)
        ids = self.sim.prompts(n, generator=generator, device=torch.device("cpu") if generator is None else None)
        return [text[1:] for text in SIM_TOKENIZER.decode(ids)]  # drop the testbed's BOS

    def _prompt_ids(self, prompts: list[str]) -> torch.Tensor:
        """(n, P) testbed prompt ids; ConfigError for a prompt the task could not have drawn."""
        P = self.sim.prompt_len
        rows = []
        for prompt in prompts:
            ok = isinstance(prompt, str) and len(prompt) == P - 1 and set(prompt) <= set(SIM_TOKENIZER.symbols)
            if ok and self.name == "addition":
                D = self.sim.n_digits
                ok = prompt[D] == "+" and prompt[-1] == "=" and (prompt[:D] + prompt[D + 1 : 2 * D + 1]).isdigit()
            if not ok:
                raise ConfigError(f"{prompt!r} is not a prompt of the {self.name} task {self.sim!r}")
            rows.append(SIM_TOKENIZER.encode(SIM_TOKENIZER.bos_symbol + prompt))
        return torch.tensor(rows, dtype=torch.long).reshape(len(prompts), P)

    # ---- rewards --------------------------------------------------------------------------------

    def reward(self, prompts: list[str], completions: list[str]) -> torch.Tensor:
        """(n,) float32 rewards in [0, 1] of `completions` to `prompts` (module docstring)."""
        if len(prompts) != len(completions):
            raise ConfigError(f"got {len(prompts)} prompts but {len(completions)} completions")
        if not prompts:
            return torch.zeros(0)
        prompt_ids = self._prompt_ids(list(prompts))
        L = self._scored
        tokens = torch.full((len(prompts), L), SIM_TOKENIZER.pad, dtype=torch.long)
        mask = torch.zeros(len(prompts), L, dtype=torch.bool)
        valid = torch.ones(len(prompts), dtype=torch.bool)
        for row, text in enumerate(completions):
            if not isinstance(text, str):
                raise ConfigError(f"completions must be strings, got {type(text).__name__}")
            cut = text.find(self._eos)
            if cut < 0:  # no EOS: truncated, no reward
                valid[row] = False
                continue
            answer = text[:cut] + (SIM_TOKENIZER.eos_symbol if self.sim.eos is not None else "")
            if len(answer) > L:
                valid[row] = False
                continue
            ids = [SIM_TOKENIZER.symbols.index(c) if c in SIM_TOKENIZER.symbols else UNKNOWN for c in answer]
            tokens[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[row, : len(ids)] = True
        rewards = self.sim.reward(prompt_ids, tokens, mask).float()
        return torch.where(valid, rewards, torch.zeros_like(rewards))

    # ---- the supervised cold start ----------------------------------------------------------------

    def reference_completion(self, prompt: str) -> str:
        """A completion earning reward 1 (EOS included)."""
        sim = self.sim
        prompt_ids = self._prompt_ids([prompt])
        if self.name == "addition":
            target, length = sim.targets(prompt_ids)
            return SIM_TOKENIZER.decode(target[0, : int(length[0])])
        if self.name == "pattern":
            return SIM_TOKENIZER.decode(torch.tensor(sim.target)) + self._eos
        # count: the smallest allowed count n, the counted token n times then a different digit
        n = int(torch.nonzero(sim._allowed())[0])
        token = SIM_TOKENIZER.symbols[sim.token]
        filler = "0" if token != "0" else "1"
        return token * n + filler * (sim.length - n) + self._eos


def make_task(name: str, tokenizer: Tokenizer, **knobs) -> TextTask:
    """The text task `name` (one of TASKS) with the testbed's difficulty knobs:

        pattern   length, min_matches, target, partial_credit
        count     length, token, min_count, parity
        addition  n_digits, partial_credit
    """
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; valid names are {', '.join(TASKS)}")
    if not isinstance(tokenizer, Tokenizer):
        raise ConfigError(f"make_task needs a train.tokenizer.Tokenizer, got {type(tokenizer).__name__}")
    missing = sorted(set(_NEEDED) - set(tokenizer.symbols))
    if missing:
        raise ConfigError(f"the tokenizer lacks the characters {''.join(missing)!r} the tasks write")
    cls = _SIM_CLASSES[name]
    allowed = [f for f in cls.__dataclass_fields__]
    unknown = sorted(set(knobs) - set(allowed))
    if unknown:
        raise ConfigError(f"unknown {name} task option(s) {', '.join(unknown)}; valid options are {', '.join(allowed)}")
    return TextTask(name, cls(**knobs), tokenizer)
