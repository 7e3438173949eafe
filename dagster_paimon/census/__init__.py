"""The option census: every Paimon option key, handled, inert for us, or refused (and where)."""
