"""The memory API for LLM agents: tool definitions derived from the contract's wire models (`mnemo tools`) and
a Model Context Protocol server that calls mnemo over NATS for one bound tenant and user (`mnemo mcp`)."""
