"""arkbench harness: scenarios -> plan -> runtime -> runner -> engine -> result.json."""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("arkbench")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+src"
