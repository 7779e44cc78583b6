"""The Docker sandbox: daemon, image, container, channel, pool, runner."""
