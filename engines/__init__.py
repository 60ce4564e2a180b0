"""One folder per engine: settings.py (validated settings, no driver import), adapter.py (ENGINE), ddl-*.sql."""
