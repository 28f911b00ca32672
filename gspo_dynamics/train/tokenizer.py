"""The trainer's tokenizer: one character is one token, over the sequence tasks' alphabet.

It is the sequence testbed's tokenizer (`gspo_dynamics.sim.sequence.Tokenizer`: digits 0-9 have
ids 0-9, then "+", "=", and the special "^" BOS, "$" EOS, "_" PAD) with what a language-model
trainer needs on top: left-padded batches with an attention mask, and decoding that drops
padding and BOS.

    tok = Tokenizer()
    ids, mask = tok.batch_encode(["12+34=", "5+6="])   # (2, 7) left-padded, BOS first
    tok.decode([4, 6, tok.eos_id, tok.pad_id])          # "46$"

EOS stays visible in decoded text ("$"), so a reward can tell a finished answer from a
truncated one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.sequence import Tokenizer as _SequenceTokenizer


@dataclass(frozen=True, kw_only=True)
class Tokenizer(_SequenceTokenizer):
    """Characters <-> ids (id i is `symbols[i]`); `symbols` may add characters to the default
    alphabet (each one character, all distinct)."""

    @property
    def pad_id(self) -> int:
        return self.pad

    @property
    def bos_id(self) -> int:
        return self.bos

    @property
    def eos_id(self) -> int:
        return self.eos

    def encode(self, text: str, add_bos: bool = False) -> list[int]:
        """Ids of `text`, one per character, after BOS when `add_bos`; ConfigError naming
        characters outside the vocabulary."""
        if not isinstance(text, str):
            raise ConfigError(f"text to encode must be a string, got {type(text).__name__}")
        return ([self.bos_id] if add_bos else []) + super().encode(text)

    def decode(self, ids, mask=None) -> str | list[str]:
        """Text of ids (L,) (a list of texts for (B, L)). Without `mask`, PAD and BOS are left
        out; with `mask` (same shape), exactly the positions where it is nonzero are kept (a PAD
        or BOS a model sampled as a real token shows as its symbol)."""
        ids = torch.as_tensor(ids, dtype=torch.long).cpu()
        if mask is None:
            keep = (ids != self.pad_id) & (ids != self.bos_id)
        else:
            keep = torch.as_tensor(mask).bool().cpu()
            if keep.shape != ids.shape:
                raise ValueError(f"mask must have the ids' shape {tuple(ids.shape)}, got {tuple(keep.shape)}")
        if ids.ndim == 2:
            return [self._text(row[k]) for row, k in zip(ids, keep)]
        if ids.ndim != 1:
            raise ValueError(f"ids must have shape (L,) or (B, L), got {tuple(ids.shape)}")
        return self._text(ids[keep])

    def _text(self, ids: torch.Tensor) -> str:
        bad = [i for i in ids.tolist() if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"token ids {bad} are outside the vocabulary [0, {self.vocab_size})")
        return "".join(self.symbols[i] for i in ids.tolist())

    def batch_encode(
        self, texts: list[str], left_pad: bool = True, add_bos: bool = True, device=None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Ids (B, P) int64 and attention mask (B, P) int64 (1 = real token) of B texts of any
        lengths, padded with PAD on the left (`left_pad`, what generation needs) or the right;
        P = the longest encoding. Each text starts with BOS when `add_bos`."""
        if isinstance(texts, str) or not len(texts):
            raise ConfigError("batch_encode needs a non-empty list of strings")
        encoded = [self.encode(t, add_bos=add_bos) for t in texts]
        P = max(len(e) for e in encoded)
        if P == 0:
            raise ConfigError("batch_encode got only empty strings and add_bos=False: nothing to encode")
        ids = torch.full((len(texts), P), self.pad_id, dtype=torch.long)
        mask = torch.zeros(len(texts), P, dtype=torch.long)
        for row, e in enumerate(encoded):
            cols = slice(P - len(e), P) if left_pad else slice(0, len(e))
            ids[row, cols] = torch.tensor(e, dtype=torch.long)
            mask[row, cols] = 1
        if device is not None:
            ids, mask = ids.to(device), mask.to(device)
        return ids, mask
