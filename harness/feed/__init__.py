"""The block feed: generates, prepares and digests every block outside the memory limit (the generator
and the expected-state model grow with the data) and serves them to the runner over a Unix socket in
the run directory. server.py is the host side, started by the runtime; the runner's client is
harness/runner/feed_client.py; protocol.py is what both sides share."""
