"""Which of a fit's implied quantities the data identify (issue 49): a number the data do not identify is not
printed; it is null with the reason.

The reward's reach [lo, hi] is the range given (`reward_range`), else the observed rewards' range [a, b] widened by
its own span w = b - a on each side, [a - w, b + w], w = max(|a|, |b|, 1) where b = a (`reward_reach_of`, the one
rule: `predict._end_reward.reward_reach` widens a pilot's by it; a range the user gives is checked by
`check_reward_range`):

    plateau R_inf        identified  iff  the fit is stable (damping > 0: R_inf attracts),  se(R_inf) finite,
                                          se(R_inf) <= hi - lo,  lo <= R_inf <= hi
    remaining rise       identified  iff  the plateau is,  and  se(R_inf - R(t_end)) <= hi - lo
    time to plateau t_p  identified  iff  the plateau is,  t_p finite,  t_p <= STEP_MULTIPLE t_end,
                                          and  se(t_p) <= STEP_MULTIPLE t_end

A standard error larger than all the reward can reach says the data give no value; a plateau past the reach is
one no run shows. For the time: the exponential's 5% time is t_p = t_0 + tau ln 20 ~ 3 tau, and a tau the data
identify is at most of the order of the span they cover, so a time several logs long is an extrapolation the
data do not carry.
"""

from __future__ import annotations

import math

from gspo_dynamics._errors import ConfigError

STEP_MULTIPLE = 4.0  # the latest time to the plateau given, in units of the log's last step


SE_SHOWN = 1000.0  # a standard error more than this many reaches is said as that bound, not as its own number


def _se_beyond(se: float, width: float) -> str:
    """Why a fitted value is not identified: its standard error beyond the reward's whole reach `width`, said as a
    number where it is within SE_SHOWN reaches, else as that bound (a 9e+05 on a [0, 1] reward is no number to
    print: it only says the fit has no value there)."""
    if se > SE_SHOWN * width:
        return f"its standard error exceeds the whole reach of the reward, {width:.3g}, more than {SE_SHOWN:g} times"
    return f"its standard error {se:.2g} exceeds the whole reach of the reward, {width:.3g}"


def reward_reach_of(r_range: tuple[float, float], reward_range: tuple[float, float] | None) -> tuple[float, float]:
    """[lo, hi]: `reward_range`, else the observed [a, b] widened by b - a on each side (module docstring)."""
    if reward_range is not None:
        return float(reward_range[0]), float(reward_range[1])
    a, b = r_range
    w = b - a if b > a else max(abs(a), abs(b), 1.0)
    return a - w, b + w


def unidentified(plateau: tuple[float, float | None], remaining_se: float | None, time: tuple[float, float],
                 t_end: float, reach: tuple[float, float], unstable: bool = False) -> dict[str, str]:
    """{quantity: why} for `plateau`, `remaining_rise` and `time_to_plateau` where the data do not identify them
    (the module docstring's rules); `plateau` and `time` are (value, stderr), `reach` the reward's [lo, hi];
    `unstable`: the fitted damping is <= 0, so R_inf is an equilibrium the curve leaves, no plateau."""
    (value, se), (lo, hi) = plateau, reach
    width, out = hi - lo, {}
    if unstable:
        out["plateau"] = ("the fit is unstable (damping <= 0): its equilibrium is one the curve moves away from, not a "
                          "level it settles on")  # its value, often far outside the rewards, is no number to print
    elif se is None or not math.isfinite(se):
        out["plateau"] = "the fit does not locate it (its standard error is not finite)"
    elif se > width:
        out["plateau"] = f"{_se_beyond(se, width)} (the curve does not bend enough)"
    elif not lo <= value <= hi:
        out["plateau"] = f"the fitted plateau lies outside what the reward can reach, [{lo:.4g}, {hi:.4g}]"
    if "plateau" in out:
        out["remaining_rise"] = out["time_to_plateau"] = "the plateau is not identified: " + out["plateau"]
        return out
    if remaining_se is None or not math.isfinite(remaining_se) or remaining_se > width:
        out["remaining_rise"] = "its standard error exceeds the whole reach of the reward"
    t, t_se, limit = time[0], time[1], STEP_MULTIPLE * max(t_end, 1.0)
    if not math.isfinite(t) or t > limit:
        out["time_to_plateau"] = (f"the fit puts it past {STEP_MULTIPLE:g} x the log's {t_end:.0f} steps, further "
                                  "than the data reach")
    elif math.isfinite(t_se) and t_se > limit:
        out["time_to_plateau"] = (f"its standard error exceeds {STEP_MULTIPLE:g} x the log's {t_end:.0f} steps")
    return out


def within_reach(imp, t_end: float, reach: tuple[float, float], unstable: bool = False) -> dict[str, str]:
    """`unidentified` of an `Implications`' plateau, remaining rise and time against another reach (a success
    rate's [0, 1], which a reader infers where the fit was given no range)."""
    return unidentified((imp.plateau.value, imp.plateau.stderr), imp.remaining_rise.stderr,
                        (imp.time_to_plateau.value, imp.time_to_plateau.stderr), t_end, reach, unstable)


def plateau_unidentified(why: dict[str, str]) -> dict[str, str]:
    """`why` with a reason for each of the plateau, its time and the remaining rise, where a stricter reading (a
    forecast's, `predict._pilot_headline.plateau_identified`) withholds them though the rules above did not."""
    fallback = why.get("plateau") or why.get("time_to_plateau") or "the fit extrapolates it past the rewards seen"
    return {**{q: fallback for q in ("plateau", "time_to_plateau", "remaining_rise")}, **why}


def params_unidentified(model: str, params: dict[str, float], stderr: dict[str, float], span: float,
                        reach: tuple[float, float], plateau_why: str | None = None) -> dict[str, str]:
    """{parameter: why} for a fit's raw parameters the data do not identify (issue 49: null with the reason, never
    printed as a number nor used as one), `span` the log's length in steps, `reach` the reward's [lo, hi]:

        r_inf              the plateau's rule above (or `plateau_why`, where a caller judged it against its own reach)
        r0                 lo <= r0 <= hi  and  se(r0) <= hi - lo
        tau                r_inf identified,  tau <= STEP_MULTIPLE span  and  se(tau) <= STEP_MULTIPLE span
        damping, stiffness r_inf identified (the oscillator's time scales are those of its approach to R_inf)

    tau, damping and stiffness set how fast the curve approaches R_inf: where the plateau is not identified
    (a ramp that does not bend), neither is how fast it is approached (a straight line fits every tau past the
    log with R_inf scaled along, `tau ~ R_inf / slope`)."""
    lo, hi = reach
    width, limit, out = hi - lo, STEP_MULTIPLE * max(span, 1.0), {}
    why = plateau_why or unidentified((params["r_inf"], stderr.get("r_inf")), None, (math.inf, math.nan), span,
                                      reach).get("plateau")
    if why:
        out["r_inf"] = why
    r0, se0 = params.get("r0", math.nan), stderr.get("r0", 0.0)
    if not lo <= r0 <= hi:
        out["r0"] = f"the fitted start lies outside what the reward can reach, [{lo:.4g}, {hi:.4g}]"
    elif math.isfinite(se0) and se0 > width:
        out["r0"] = _se_beyond(se0, width)
    timescales = ("tau",) if model == "exponential" else ("damping", "stiffness")
    for name in (n for n in timescales if n in params):
        if why:
            out[name] = "the plateau is not identified, nor how fast the curve approaches it"
        elif name == "tau" and not params[name] <= limit:
            out[name] = f"{params[name]:.2g} steps is past {STEP_MULTIPLE:g} x the log's {span:.0f} steps"
        elif name == "tau" and math.isfinite(stderr.get(name, 0.0)) and stderr[name] > limit:
            out[name] = f"its standard error exceeds {STEP_MULTIPLE:g} x the log's {span:.0f} steps"
    return out


def check_reward_range(reward_range) -> None:
    """ConfigError unless reward_range is None or two finite numbers lo < hi."""
    if reward_range is None:
        return
    ok = isinstance(reward_range, (tuple, list)) and len(reward_range) == 2 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in reward_range)
    if not ok or not reward_range[0] < reward_range[1]:
        raise ConfigError(f"the reward range (--reward-range LO HI) must be two finite numbers LO < HI, got {reward_range!r}")


def nulled(values: dict[str, float], why: dict[str, str]) -> dict:
    """`values` with each parameter of `why` (`params_unidentified`) set to None: JSON's null with the reason beside."""
    return {k: None if k in why else v for k, v in values.items()}


def params_text(params: dict[str, float], stderr: dict[str, float], fitted, why: dict[str, str]) -> str:
    """The parameters as text, `r0 = 0.2 +- 0.01`; one of `why` as `r_inf not identified (the reason)`, never as a
    number; one not in `fitted` as fixed."""
    def one(k: str, v: float) -> str:
        if k in why:
            return f"{k} not identified ({why[k]})"
        if k not in fitted:
            return f"{k} = {v:.4g} (fixed)"
        return f"{k} = {v:.4g} +- {stderr[k]:.2g}" if math.isfinite(stderr[k]) else f"{k} = {v:.4g} (not identified)"

    return ", ".join(one(k, v) for k, v in params.items())


def stiffness_unidentified(fit) -> tuple[str, str] | None:
    """(what, why) where the data do not identify the parameter a fit's stiffness is read from (the oscillator's
    stiffness, the exponential's time scale tau: `TrajectoryFit.unidentified_params`), else None."""
    name = "stiffness" if fit.model == "oscillator" else "tau"
    why = fit.unidentified_params().get(name)
    return (f"the fitted {'stiffness' if name == 'stiffness' else 'time scale'} is not identified", why) if why else None
