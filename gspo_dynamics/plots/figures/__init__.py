"""The figure families of `gspo-dynamics figures`: each module draws one family's data (a frozen
dataclass computed by `gspo_dynamics.experiments`) into given matplotlib axes, and never saves. The
registry that computes, lays out and names them is `gspo_dynamics.plots.registry`, `gspo_dynamics.plots.build` saves them."""
