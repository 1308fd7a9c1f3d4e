"""How names and scraped text are shown: escaped where a UTF-8 report or a terminal cannot
hold them, so that a name that is not UTF-8 can still be stored, and a scraped escape sequence
is never obeyed by a terminal."""

from __future__ import annotations

import re

__all__ = ["printable", "shown", "unshown"]


# Bytes of a name that are not UTF-8 (held by Python as surrogate escapes), other lone
# surrogates, and control characters: shown escaped, so that a name can be printed and stored
# in a UTF-8 report, and cannot send escape sequences to a terminal.
_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match[0])
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, as os.fsdecode holds it
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(name: str) -> str:
    """``name`` as it can be printed and stored: what cannot be is shown escaped (\\xff)."""
    return _UNSHOWABLE.sub(_escaped, name)


_ESCAPE = re.compile(r"\\x([0-9a-f]{2})|\\u(d[89a-f][0-9a-f]{2})")


def unshown(name: str) -> str:
    """The file name ``shown`` made ``name`` of: ``\\x80`` to ``\\xff`` are taken for bytes that
    are not UTF-8 (rather than the control characters U+0080 to U+009F, which a name hardly
    holds). A name that held ``\\xNN`` itself is ambiguous: try it as it is first."""
    return _ESCAPE.sub(_unescaped, name)


def _unescaped(match: re.Match[str]) -> str:
    if match[1] is not None:
        code = int(match[1], 16)
        return chr(code + 0xDC00 if code >= 0x80 else code)
    return chr(int(match[2], 16))


# Control characters but line ends and tabs: scraped titles and texts can hold escape
# sequences, which a terminal would obey (set its title, hide text): shown escaped instead.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: control characters shown as ``\\xNN``."""
    return _CONTROL.sub(_escaped_control, text)


def _escaped_control(match: re.Match[str]) -> str:
    return f"\\x{ord(match[0]):02x}"
