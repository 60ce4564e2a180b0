"""arkbench harness: scenarios -> plan -> runtime -> runner -> engine -> result.json."""
