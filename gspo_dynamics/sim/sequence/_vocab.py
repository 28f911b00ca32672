"""The one small vocabulary every sequence task shares, and a character-level tokenizer for it.

One character is one token, so a tensor of ids and its text are the same length and tests can be
written as strings:  "^12+34=" -> [BOS, 1, 2, PLUS, 3, 4, EQUALS];  "46$" -> [4, 6, EOS].
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gspo_dynamics._errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class Tokenizer:
    """Characters <-> token ids: id i is `symbols[i]`.

    The default alphabet is the ten digits (ids 0-9, so digit d has id d), "+" and "=", then the
    special tokens: "^" begin-of-sequence, "$" end-of-sequence, "_" padding.
    """

    symbols: str = "0123456789+=^$_"  # one character per token id
    bos_symbol: str = "^"  # starts every prompt
    eos_symbol: str = "$"  # ends a variable-length response
    pad_symbol: str = "_"  # fills positions that are not real tokens

    def __post_init__(self) -> None:
        if len(set(self.symbols)) != len(self.symbols):
            raise ConfigError(f"tokenizer symbols must be distinct characters, got {self.symbols!r}")
        for name in ("bos_symbol", "eos_symbol", "pad_symbol"):
            symbol = getattr(self, name)
            if len(symbol) != 1 or symbol not in self.symbols:
                raise ConfigError(f"{name} must be one character of {self.symbols!r}, got {symbol!r}")

    @property
    def vocab_size(self) -> int:
        """V, the number of token ids."""
        return len(self.symbols)

    @property
    def bos(self) -> int:
        return self.symbols.index(self.bos_symbol)

    @property
    def eos(self) -> int:
        return self.symbols.index(self.eos_symbol)

    @property
    def pad(self) -> int:
        return self.symbols.index(self.pad_symbol)

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, one per character."""
        bad = sorted(set(text) - set(self.symbols))
        if bad:
            raise ConfigError(f"characters {''.join(bad)!r} are not in the vocabulary {self.symbols!r}")
        return [self.symbols.index(c) for c in text]

    def encode_batch(self, texts: list[str]) -> torch.Tensor:
        """(B, L) int64 ids of B strings of one length L."""
        lengths = {len(t) for t in texts}
        if len(lengths) != 1:
            raise ConfigError(f"a batch needs strings of one length, got lengths {sorted(lengths)}")
        return torch.tensor([self.encode(t) for t in texts], dtype=torch.long)

    def decode(self, ids, mask=None) -> str | list[str]:
        """Text of a (L,) id sequence, or a list of texts for (B, L); positions where `mask` is 0
        (padding after an end-of-sequence token) are left out."""
        ids = torch.as_tensor(ids)
        if ids.ndim == 2:
            masks = [None] * ids.shape[0] if mask is None else list(torch.as_tensor(mask))
            return [self.decode(row, m) for row, m in zip(ids, masks)]
        keep = torch.ones_like(ids, dtype=torch.bool) if mask is None else torch.as_tensor(mask).bool()
        return "".join(self.symbols[i] for i in ids[keep].tolist())


TOKENIZER = Tokenizer()
