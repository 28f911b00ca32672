"""The figure families of `gspo-dynamics figures`: each module computes its data (a frozen
dataclass, no drawing) and draws it into given matplotlib axes (no saving). The registry that
lays them out, names them and saves them is `gspo_dynamics.plots.registry`."""
