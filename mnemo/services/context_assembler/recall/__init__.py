"""Recall: the memory API's search (``mnemo.rpc.memory.search.v1``) and the memories it remembered as context
items, with the ranking levers both share (recency, near-duplicates)."""
