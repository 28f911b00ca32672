"""Small addition: the prompt holds two D-digit numbers, the response must be their sum.

    prompt   "^" a "+" b "="       a, b zero-padded to D digits:  P = 2 D + 3 tokens
    response  str(a + b) "$"       the sum without leading zeros, then EOS:  at most L = D + 2 tokens
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gspo_dynamics._checks import positive_int
from gspo_dynamics.sim.sequence._task import check_position_probs, check_response
from gspo_dynamics.sim.sequence._vocab import TOKENIZER

PLUS = TOKENIZER.symbols.index("+")
EQUALS = TOKENIZER.symbols.index("=")


@dataclass(frozen=True, kw_only=True)
class Addition:
    """Add two random D-digit numbers; reward 1 for exactly the right digits followed by EOS.

        r(y) = [ y = digits(a + b) EOS ]      (partial credit: the fraction of the target's
                                               positions, EOS included, that y reproduces)

    Difficulty grows with `n_digits`: a uniform policy over V tokens succeeds with probability
    V^-(|digits(a + b)| + 1).
    """

    n_digits: int = 2  # D, digits per operand
    partial_credit: bool = False  # reward the matched fraction of the target instead of 0/1

    def __post_init__(self) -> None:
        positive_int("n_digits", self.n_digits)

    @property
    def vocab_size(self) -> int:
        return TOKENIZER.vocab_size

    @property
    def prompt_len(self) -> int:
        return 2 * self.n_digits + 3

    @property
    def response_len(self) -> int:
        return self.n_digits + 2

    @property
    def eos(self) -> int:
        return TOKENIZER.eos

    def prompts(self, batch: int, *, generator: torch.Generator | None = None, device=None) -> torch.Tensor:
        """(B, 2D + 3) prompts "^a+b=" with a, b uniform on [0, 10^D), digits drawn independently;
        on `device`, by default the generator's."""
        positive_int("batch", batch)
        if device is None and generator is not None:
            device = generator.device
        D = self.n_digits
        digits = torch.randint(0, 10, (batch, 2, D), generator=generator, device=device)  # (B, 2, D)

        def column(token):
            return torch.full((batch, 1), token, dtype=torch.long, device=digits.device)

        return torch.cat([column(TOKENIZER.bos), digits[:, 0], column(PLUS), digits[:, 1], column(EQUALS)], dim=1)

    def targets(self, prompts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The correct responses of `prompts` (B, P).

        Returns:
            target (B, L): digits of a + b, EOS, then PAD;
            length (B,): real target tokens (digits + EOS), between 2 and L.
        """
        D, L = self.n_digits, self.response_len
        a = prompts[:, 1 : 1 + D]  # (B, D) most significant first
        b = prompts[:, 2 + D : 2 + 2 * D]
        total = torch.zeros(prompts.shape[0], D + 1, dtype=torch.long, device=prompts.device)  # (B, D + 1)
        carry = torch.zeros_like(a[:, 0])
        for j in range(D - 1, -1, -1):  # schoolbook addition from the least significant digit
            s = a[:, j] + b[:, j] + carry
            total[:, j + 1], carry = s % 10, s // 10
        total[:, 0] = carry
        # leading zeros, keeping the last digit of a zero sum
        zeros = torch.cumprod((total == 0).long(), dim=1).sum(1).clamp(max=D)  # (B,)
        tail = torch.full((prompts.shape[0], L), TOKENIZER.pad, dtype=torch.long, device=prompts.device)
        tail[:, 0] = TOKENIZER.eos
        padded = torch.cat([total, tail], dim=1)  # (B, D + 1 + L)
        index = zeros[:, None] + torch.arange(L, device=prompts.device)  # (B, L) shift out the zeros
        return padded.gather(1, index), D + 2 - zeros

    def reward(self, prompts: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) rewards of responses `tokens` (B, L) with real-token `mask` (B, L)."""
        mask = check_response(self, prompts, tokens, mask)
        target, length = self.targets(prompts)
        in_target = torch.arange(self.response_len, device=tokens.device) < length[:, None]  # (B, L)
        hits = (tokens == target) & mask & in_target  # (B, L)
        dtype = torch.get_default_dtype()
        if self.partial_credit:
            return hits.sum(-1).to(dtype) / length.to(dtype)
        # right tokens everywhere in the target, and real tokens nowhere else
        return ((hits == in_target).all(-1) & (mask == in_target).all(-1)).to(dtype)

    def expected_reward(self, position_probs: torch.Tensor, prompts: torch.Tensor) -> torch.Tensor:
        """Exact E[r | prompt] under a policy with independent positions whose sampling stops at
        the first EOS, differentiable.

        With p_t = pi_t(target_t), alive_t = prod_{s<t} (1 - pi_s(EOS)) and n = |target|:
            E[r] = prod_{t<n} p_t,        partial credit:  E[r] = (1/n) sum_{t<n} alive_t p_t.

        Args:
            position_probs: (L, V) token distribution of each position.
            prompts: (B, P).

        Returns:
            (B,) expected reward per prompt.
        """
        check_position_probs(position_probs, self.response_len)
        target, length = self.targets(prompts)  # (B, L), (B,)
        L = self.response_len
        in_target = torch.arange(L, device=prompts.device) < length[:, None]  # (B, L)
        p = position_probs[torch.arange(L), target]  # (B, L)
        one = torch.ones_like(p)
        if not self.partial_credit:  # EOS ends the target, so matching it is stopping in time
            return torch.where(in_target, p, one).prod(-1)
        survive = 1.0 - position_probs[:, TOKENIZER.eos]  # (L,)
        alive = torch.cat([survive.new_ones(1), torch.cumprod(survive, 0)[:-1]])  # (L,)
        return torch.where(in_target, alive * p, 0 * one).sum(-1) / length.to(p.dtype)
