"""mnemo: long-term memory and lore for chat and roleplay platforms, as services on NATS.

One import root: ``mnemo.shared`` (infrastructure and contracts), ``mnemo.services.<name>`` (one service each,
``python -m mnemo.services.<name>`` runs it alone) and ``mnemo.runtime`` (the host: the ``mnemo`` command).
"""
