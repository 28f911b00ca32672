"""Vectorised torch testbeds, batched over configurations and seeds in one tensor program.

The softmax bandit (`BanditTask`, `simulate`) is the exact reduction the theory describes;
`simulated_critical_refresh_interval` measures stability boundaries by simulation alone.
"""

from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.sim.bandit import SimulationResult, simulate
from gspo_dynamics.sim.stability import simulated_critical_refresh_interval

__all__ = ["BanditTask", "SimulationResult", "simulate", "simulated_critical_refresh_interval"]
