"""The host process: the command line, the one-process stack, replay, the demo; not a service."""
