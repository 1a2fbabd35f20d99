"""``python -m services.gateway``: run the HTTP gateway alone (it needs only NATS)."""

from services.gateway.serve import main

main()
