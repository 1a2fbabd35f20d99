"""``python -m mnemo.services.gateway``: run the HTTP gateway alone (it needs only NATS)."""

from mnemo.services.gateway.serve import main

main()
