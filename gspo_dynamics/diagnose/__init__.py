"""Failure-mode verdicts on a training log.

    from gspo_dynamics.diagnose import diagnose
    d = diagnose(read_log("trainer_state.json"), hparams=None)
    d.primary, d.verdicts, d.fit, d.implications, d.to_json(), d.report_lines()

Modes and the signals behind them (thresholds are named constants in `_trend` and `_signals`):

  healthy_saturation     significant rise, R^2 >= 0.5, the fitted plateau reached, damping margin > 0
  still_rising           fitted plateau above the last value by > 10% of the rise (and > 2 s.e.)
  stalled                no significant change late vs early (Welch |z| < 3)
  noise_dominated        a change, but the fluctuation around the fit exceeds the trend (R^2 < 0.5);
                         advice from the 1/G scaling of the fluctuation variance
  dynamical_instability  significantly complex roots of the fit, a growing fit, a periodic residual
                         (Fisher's g test), a collapse after a peak, damping margin < 0.25, or the
                         refresh interval past its critical value (needs hyperparameters)
  advantage_degeneracy   zero-std group fraction > 0.5, compared with p^G + (1-p)^G at the measured
                         success rate (G from hparams, or estimated from the log)
  policy_concentration   entropy late/early < 0.5 (with the within-group reward std collapsing)
  reward_hacking         eval reward falling while train reward rises, length doubling, truncation
                         rising, one reward component carrying the gain while another falls
"""

from gspo_dynamics.diagnose._diagnose import diagnose
from gspo_dynamics.diagnose._verdict import CAUSE_MODES, MODES, TOO_SHORT, TREND_MODES, Diagnosis, Verdict

__all__ = ["CAUSE_MODES", "MODES", "TOO_SHORT", "TREND_MODES", "Diagnosis", "Verdict", "diagnose"]
