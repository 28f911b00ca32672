"""Failure-mode verdicts on a training log.

    from gspo_dynamics.diagnose import diagnose
    d = diagnose(read_log("trainer_state.json"), hparams=None)
    d.primary, d.verdicts, d.fit, d.implications, d.to_json(), d.report_lines()

Modes and the signals behind them (thresholds are named constants in `_trend`, `_instability`, `_context`, `_signals`
and `_hacking`):

  healthy_saturation     significant rise, the plateau shown reached: late-half slope z < 2 (or a negligible
                         climb), no climb >= 10% of the rise at slope z >= 1, a good fit's plateau inside the
                         rewards seen and reached (a low R^2 is a caveat as long as the late half could have
                         seen the rise go on);
                         with hyperparameters, T below the exact critical T
  still_rising           the late half climbs (slope z >= 2, >= 10% of the rise), or a good fit's plateau
                         above the last value by > 10% of the rise (and > 2 s.e.)
  unsure                 a significant rise is never stalled or noise dominated: where neither of the two
                         above is established, the answer is "unsure: still rising or healthy saturation"
                         (`Verdict.unsure`, `Diagnosis.unsure`), advising only a longer run; a stalled or
                         noise-dominated reading below 0.6 is "unsure: stalled or noise dominated"; a rise short
                         of significance that a powered test favours over none (P(no change) < 1/2) is "unsure:
                         still rising or stalled"
  stalled                no significant change late vs early (Welch |z| < 3) that the data could have seen
                         (power calculation: the change detectable with 80% power <= 0.2 per-sample reward
                         stds, Cohen's small effect); with KL or entropy moving meanwhile, drift without
                         progress (a note); on a [0, 1] score only as sure as it is below its ceiling, and
                         within 0.05 of it a solved task (healthy saturation, `_solved_groups.stall_at_ceiling`)
  noise_dominated        the noise hides whether the run learns: no significant change and a change
                         detectable with 80% power > 0.2 reward stds, or a noisy fit (R^2 < 0.5) of a
                         significant fall whose reading is below confidence 0.5; no more confident than the
                         change's estimate is off 0, L((|z| - 1) / 0.5);
                         advice from the 1/G scaling of the fluctuation variance
  dynamical_instability  without hyperparameters, the data: significantly complex roots or a periodic
                         residual (confidence = the weakest of Fisher-g significance, share of the
                         variance, cycles seen), a collapse after a real peak, a sustained fall the run
                         climbed back from (its break named by the CUSUM change-point test, `_changepoint`),
                         or a fall of a few rows the quarter windows average away (every window width scanned,
                         Bonferroni over the pairs, `_dip`),
                         a policy left with no signal by an update (`_signal_lost`); with them, the refresh
                         interval past the exact discrete critical T (the continuous damping margin is
                         only reported), data ringing kept only where the exact regime can ring
  advantage_degeneracy   (zero-std groups appearing while the reward still rises rank below it, or are a note)
                         no group with any signal (reward_std 0 / every group zero-std on >= 90% of rows);
                         zero-std group fraction > 0.5, compared with p^G + (1-p)^G at the measured
                         success rate (G from hparams, or estimated from the log)
  policy_concentration   entropy late/early < 0.5 (with the within-group reward std collapsing) below the
                         reward's ceiling; on a [0, 1] score that stopped rising, only as confident as the
                         reward is below its ceiling (partial credit can cap it below 1), and within the
                         ceiling's gap a solved task (a note); while the reward still rises, a note too
                         (no harm shown for a cause to explain)
  reward_hacking         eval reward falling from its peak while train reward rises (first), length doubling, truncation
                         rising (these two only while the reward rises significantly, Welch z >= 3: an
                         exploit raises the reward; with a falling reward they are a collapse's symptom,
                         with a flat one the loss's length bias, and go into the notes), one reward
                         component carrying the gain while another falls (Welch z <= -3, `COMPONENT_FALL_Z`, and
                         by 10% of the reward's rise or more, `FALL_SHARE`)

The primary verdict is the best-supported mode (highest confidence), after ranking what follows
from another mode below it: zero-std groups left by a collapse, by an exploit or by a task being
solved (all-correct groups at success > 1/2), a rise made by the few groups with signal while most
are all-wrong from the start (below the degeneracy), an entropy collapse caused by an exploit or by a
divergence (the reward falling meanwhile; but a collapse that came first, the reward held below its ceiling until
the fall, ranks the fall below it), a stalled or noisy mean explained by a cause at 0.7 or above,
a train reward rising while the eval reward falls (`_ranking`). Reported confidences are
Platt-recalibrated on labelled logs of four families (three generators, TRL's GRPOTrainer) (`_calibration`; `paper_repro/diagnose_generalisation.py`).

Notes beside the verdicts include the KL pull on a solved policy (`_kl_pull`): with a KL weight under Adam and
T >= 5, refresh windows whose groups were nearly all flat and solved while the KL to the reference fell and the
entropy rose.
"""

from gspo_dynamics.diagnose._diagnose import diagnose
from gspo_dynamics.diagnose._finding import FINDINGS, NOTE as FINDING_NOTE
from gspo_dynamics.diagnose._verdict import CAUSE_MODES, MODES, TOO_SHORT, TREND_MODES, Diagnosis, Verdict

__all__ = ["CAUSE_MODES", "FINDINGS", "FINDING_NOTE", "MODES", "TOO_SHORT", "TREND_MODES", "Diagnosis", "Verdict", "diagnose"]
