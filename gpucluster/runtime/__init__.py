"""A build's running: progress display, cost measurement, the cycle collector paused."""
