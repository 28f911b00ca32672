"""Fixed-length tasks whose reward counts tokens: `PatternMatch` and `CountParity`.

Both have a one-token prompt (BOS) and no EOS, so every response has exactly L real tokens, and an
exact expected reward for any policy whose positions are independent (`TabularPolicy.probs()`):
the number of hits is a sum of independent Bernoullis (`count_distribution`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.sequence._task import check_position_probs, check_response, count_distribution
from gspo_dynamics.sim.sequence._vocab import TOKENIZER

PARITIES: tuple[str, ...] = ("even", "odd", "any")


class _FixedLength:
    """Shared by the two tasks: a BOS prompt, L = `length` response tokens, no EOS."""

    length: int

    @property
    def vocab_size(self) -> int:
        return TOKENIZER.vocab_size

    @property
    def prompt_len(self) -> int:
        return 1

    @property
    def response_len(self) -> int:
        return self.length

    @property
    def eos(self) -> None:
        return None

    def prompts(self, batch: int, *, generator: torch.Generator | None = None, device=None) -> torch.Tensor:
        """(B, 1) BOS prompts; the task has no randomness, so `generator` draws nothing."""
        positive_int("batch", batch)
        return torch.full((batch, 1), TOKENIZER.bos, dtype=torch.long, device=device)


@dataclass(frozen=True, kw_only=True)
class PatternMatch(_FixedLength):
    """Reproduce a target pattern: reward 1 when at least k of the L positions match.

        r(y) = [ sum_t 1{y_t = target_t} >= k ]        (partial credit: r(y) = (1/L) sum_t 1{y_t = target_t})

    Difficulty grows with `length` and `min_matches`; a uniform policy over V tokens succeeds with
    probability P(Binomial(L, 1/V) >= k), (1/V)^L for an exact match.
    """

    length: int = 8  # L, response tokens
    min_matches: int | None = None  # k, matches needed for reward 1; None = L (exact match)
    target: tuple[int, ...] | str | None = None  # target token ids (or text); None = "0123456789" repeated
    partial_credit: bool = False  # reward the matched fraction instead of the 0/1 threshold

    def __post_init__(self) -> None:
        L = positive_int("length", self.length)
        k = L if self.min_matches is None else self.min_matches
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= L:
            raise ConfigError(f"min_matches must be an integer in [1, {L}] (the length), got {self.min_matches!r}")
        object.__setattr__(self, "min_matches", k)
        target = self.target
        if target is None:
            target = tuple(t % 10 for t in range(L))
        elif isinstance(target, str):
            target = tuple(TOKENIZER.encode(target))
        target = tuple(target)
        if len(target) != L:
            raise ConfigError(f"target must have length {L} (the length), got {len(target)} tokens")
        if not all(isinstance(t, int) and 0 <= t < TOKENIZER.vocab_size for t in target):
            raise ConfigError(f"target must be token ids in [0, {TOKENIZER.vocab_size}), got {target!r}")
        object.__setattr__(self, "target", target)

    def reward(self, prompts: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) rewards of responses `tokens` (B, L) with real-token `mask` (B, L)."""
        mask = check_response(self, prompts, tokens, mask)
        target = torch.tensor(self.target, device=tokens.device)  # (L,)
        matches = ((tokens == target) & mask).sum(-1)  # (B,)
        dtype = torch.get_default_dtype()
        if self.partial_credit:
            return matches.to(dtype) / self.length
        return (matches >= self.min_matches).to(dtype)

    def expected_reward(self, position_probs: torch.Tensor) -> torch.Tensor:
        """Exact E[r] under a policy with independent positions, differentiable.

        With p_t = pi_t(target_t):  E[r] = P(sum_t Bernoulli(p_t) >= k)  (partial credit: mean_t p_t).

        Args:
            position_probs: (..., L, V) token distribution of each position.

        Returns:
            (...) expected reward.
        """
        check_position_probs(position_probs, self.length)
        target = torch.tensor(self.target, device=position_probs.device)
        p = position_probs[..., torch.arange(self.length), target]  # (..., L)
        if self.partial_credit:
            return p.mean(-1)
        return count_distribution(p)[..., self.min_matches :].sum(-1)


@dataclass(frozen=True, kw_only=True)
class CountParity(_FixedLength):
    """Count a token: reward 1 when it occurs at least c times and the count has the given parity.

        n(y) = sum_t 1{y_t = token},     r(y) = [ n(y) >= c ] [ n(y) = parity (mod 2) ]

    The reward depends on all positions jointly (parity), unlike an exact pattern match.
    Difficulty grows with `min_count`; a uniform policy's count is Binomial(L, 1/V).
    """

    length: int = 8  # L, response tokens
    token: int = 1  # the counted token id (digit "1")
    min_count: int = 0  # c, occurrences needed
    parity: str = "even"  # "even" | "odd" | "any", the count's required parity

    def __post_init__(self) -> None:
        L = positive_int("length", self.length)
        V = TOKENIZER.vocab_size
        if isinstance(self.token, bool) or not isinstance(self.token, int) or not 0 <= self.token < V:
            raise ConfigError(f"token must be a token id in [0, {V}), got {self.token!r}")
        c = self.min_count
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= L:
            raise ConfigError(f"min_count must be an integer in [0, {L}] (the length), got {c!r}")
        if self.parity not in PARITIES:
            raise ConfigError(f"parity must be one of {', '.join(PARITIES)}; got {self.parity!r}")
        if not self._allowed().any():
            raise ConfigError(f"no count in [{c}, {L}] is {self.parity}: min_count {c} leaves no reachable reward")

    def _allowed(self, device=None) -> torch.Tensor:
        """(L + 1,) bool: which counts n = 0..L earn reward 1."""
        n = torch.arange(self.length + 1, device=device)
        ok = n >= self.min_count
        if self.parity != "any":
            ok &= (n % 2) == (1 if self.parity == "odd" else 0)
        return ok

    def reward(self, prompts: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) rewards in {0, 1} of responses `tokens` (B, L) with real-token `mask` (B, L)."""
        mask = check_response(self, prompts, tokens, mask)
        count = ((tokens == self.token) & mask).sum(-1)  # (B,)
        return self._allowed(tokens.device)[count].to(torch.get_default_dtype())

    def expected_reward(self, position_probs: torch.Tensor) -> torch.Tensor:
        """Exact E[r] under a policy with independent positions, differentiable.

        With p_t = pi_t(token):  E[r] = sum_{n allowed} P(sum_t Bernoulli(p_t) = n).

        Args:
            position_probs: (..., L, V) token distribution of each position.

        Returns:
            (...) expected reward.
        """
        check_position_probs(position_probs, self.length)
        q = count_distribution(position_probs[..., self.token])  # (..., L + 1)
        return (q * self._allowed(q.device)).sum(-1)
