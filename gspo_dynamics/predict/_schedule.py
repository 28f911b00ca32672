"""A pilot read under the run's lr schedule (`theory.schedule`): the stiffness at the peak lr and the run's end on
the pilot's clock.

A pilot logged at steps s_1..s_n ran at the factors m(s_i - 1) (the logged step s follows optimizer step s - 1), so
its fitted stiffness is the peak's times their mean m_p (equation (1) of `theory.schedule` read backwards):

    x_peak = x_pilot / m_p,        lr_max = lr x_max m_p / x_pilot.                                       (1)

Its fitted curve runs on the pilot's clock; a run of N steps has moved, by its end, as far as one of

    n_eff = s_n + (tau(N) - tau(s_n)) / m_p     steps at the pilot's factor,                          (2)

tau the lr-weighted length (`theory.schedule` (2)), so the reward at the end is the fit's at n_eff.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gspo_dynamics.theory.schedule import LRSchedule

SAME = 1e-3  # a factor within this of 1 changes nothing said


def pilot_factor(schedule: LRSchedule | None, steps) -> float:
    """m_p, the mean schedule factor over the pilot's logged steps (1 without a schedule), equation (1)."""
    if schedule is None:
        return 1.0
    steps = np.asarray(steps, dtype=float)
    return float(np.mean(schedule.factor(np.maximum(steps - 1, 0))))


def effective_run_length(schedule: LRSchedule | None, pilot_end: float, run_steps: int, factor: float) -> int:
    """n_eff of equation (2), at least one step past the pilot's end; `run_steps` without a schedule."""
    if schedule is None or factor <= 0:
        return run_steps
    left = schedule.weighted_length(run_steps) - schedule.weighted_length(int(pilot_end))
    return max(int(pilot_end) + 1, int(round(pilot_end + left / factor)))


def with_run_length(setup, run_steps: int, assumed: list[str]):
    """`setup` for a run of `run_steps` optimizer steps (--run-steps): its run's length, and its lr schedule's decay
    length where the config leaves the run's length unset or the run is longer than it (a run stops at its config's
    length); a run stopped before the config's length (a checkpoint at step 600 of max_steps 672) decayed on the
    config's clock; a length other than the config's is said in `assumed` and marked `run_given` (the answer names
    --run-steps, not the config's key)."""
    schedule = setup.schedule
    longer = setup.run_steps is not None and run_steps > setup.run_steps  # past its config's end: another schedule
    if setup.run_steps is not None and setup.run_steps != run_steps:
        assumed.append(f"the run's length is {run_steps} steps as given, not the config's {setup.run_steps}; its lr "
                       + (f"schedule is read over the run's {run_steps} (a run stops at its config's length, so this "
                          "one's was longer)" if longer else f"schedule stays the config's, over {setup.run_steps} steps"))
    if (setup.run_steps is None or longer) and schedule is not None and schedule.decays:
        schedule = dataclasses.replace(schedule, total=run_steps)
    return dataclasses.replace(setup, run_steps=run_steps, schedule=schedule,
                               run_given=setup.run_given or run_steps != setup.run_steps)
