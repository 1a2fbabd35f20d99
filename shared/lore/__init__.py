"""Lorebooks: SillyTavern-compatible World Info import/export and the pure keyword activation engine.

Everything in this package is pure (no I/O, no clocks): the services own storage and transport.
"""
