"""Ingest: platform chat events into the event log and its read models."""
