"""Integrations with training frameworks; each submodule imports its framework only when used.

    from gspo_dynamics.integrations.trl import DiagnosticsCallback   # TRL / transformers Trainer
"""
