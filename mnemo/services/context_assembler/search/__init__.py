"""Search: the vector searches of a request (query, filters, time references), what they found turned into
items (``hits.py``), and the ranking of retrieved messages (pure, ``ranking.py``)."""
