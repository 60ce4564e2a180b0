"""Parsing of human sizes and durations ("512m", "8g", "100MB", "90s")."""
import re

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_FACTORS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size_bytes(text: str | int) -> int:
    """'512m', '8g', '100MB', '64MiB' or a plain integer -> bytes (binary units, like docker's mem_limit)."""
    if isinstance(text, int):
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a size; use e.g. 512m, 8g, 100MB or a number of bytes")
    return int(float(m.group(1)) * _FACTORS[m.group(2).lower()])


def format_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n}"


def format_figure(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "B":
        return f"{v / 2**20:,.1f} MiB"
    if unit == "%":
        return f"{v:.1%}"
    sep = "" if unit in ("", "x") else " "
    return f"{v:,.3g}{sep}{unit}" if abs(v) < 10 else f"{v:,.0f}{sep}{unit}"
