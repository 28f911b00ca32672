"""Integrations with training frameworks, and the live guard behind them; each framework is imported only when used.

    from gspo_dynamics.integrations.trl import attach   # TRL / transformers Trainer: attach(trainer, stop_on=[...])
    from gspo_dynamics.integrations import Guard        # the live guard `watch` and the callback share (_guard.py)
"""

from gspo_dynamics.integrations._guard import (
    HOLD_ROWS, MIN_CONFIDENCE, PENDING, TREND_ROWS, Alert, Check, Guard, GuardSettings, summary_line,
)
from gspo_dynamics.integrations._view import VIEW_ROWS, LogView
from gspo_dynamics.integrations._webhook import AlertConfig, Notifier, Webhook, load_alert_config

__all__ = ["HOLD_ROWS", "MIN_CONFIDENCE", "PENDING", "TREND_ROWS", "VIEW_ROWS", "Alert", "AlertConfig", "Check",
           "Guard", "GuardSettings", "LogView", "Notifier", "Webhook", "load_alert_config", "summary_line"]
