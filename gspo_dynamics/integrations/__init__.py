"""Integrations with training frameworks; each submodule imports its framework only when used.

    from gspo_dynamics.integrations.trl import attach   # TRL / transformers Trainer: attach(trainer, stop_on=[...])
"""
