"""The reward-hack probes of exploits.md: the catalogue and the payloads it injects."""
