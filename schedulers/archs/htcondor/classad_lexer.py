"""Tokens of the ClassAd expression language, and its one syntax error.

The lexer turns expression text into (kind, text, value, column) tokens with
1-based columns, so every syntax error can name the column where it happened:
the scenario parser prefixes file and key and the user sees one line.
"""
from __future__ import annotations

from typing import NamedTuple

# Longest first: "=?=" must win over "=", "<=" over "<".
_OPERATORS = ("=?=", "=!=", "<=", ">=", "==", "!=", "&&", "||",
              "*", "/", "%", "+", "-", "<", ">", "!", "?", ":", "(", ")", ",", ".")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}


class ClassAdSyntaxError(ValueError):
    """An expression that does not parse; ``str`` is one line naming the column.

    ``column`` is 1-based and points at the first character of the offending
    token (or one past the end of the text for an unexpected end).
    """

    def __init__(self, message: str, column: int) -> None:
        self.message = " ".join(message.split())  # one line, whatever the input held
        self.column = column
        super().__init__(f"{self.message} at column {column}")


class Token(NamedTuple):
    """One token: ``kind`` is int, real, string, name, op or end."""

    kind: str
    text: str
    value: object
    column: int


def _number(text: str, start: int) -> tuple[Token, int]:
    """Scan an integer or real literal (``12``, ``1.5``, ``.5``, ``2e3``) at ``start``."""
    i, n = start, len(text)
    while i < n and text[i].isdigit():
        i += 1
    real = False
    if i < n and text[i] == "." and i + 1 < n and text[i + 1].isdigit():
        real = True
        i += 1
        while i < n and text[i].isdigit():
            i += 1
    if i < n and text[i] in "eE":
        j = i + 1
        if j < n and text[j] in "+-":
            j += 1
        if j < n and text[j].isdigit():
            real = True
            i = j
            while i < n and text[i].isdigit():
                i += 1
    if i < n and (text[i].isalnum() or text[i] == "_"):
        raise ClassAdSyntaxError(f"malformed number {text[start:i + 1]!r}", start + 1)
    lexeme = text[start:i]
    value: object = float(lexeme) if real else int(lexeme)
    return Token("real" if real else "int", lexeme, value, start + 1), i


def _string(text: str, start: int) -> tuple[Token, int]:
    """Scan a double-quoted string; ``\\n \\t \\r \\\\ \\"`` are escapes, ``\\x`` is ``x``."""
    out: list[str] = []
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return Token("string", text[start:i + 1], "".join(out), start + 1), i + 1
        if ch == "\\":
            if i + 1 >= n:
                break
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        out.append(ch)
        i += 1
    raise ClassAdSyntaxError("unterminated string", start + 1)


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text`` ending with an ``end`` token; raises ClassAdSyntaxError."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or (ch == "." and i + 1 < n and text[i + 1].isdigit()):
            tok, i = _number(text, i)
            tokens.append(tok)
        elif ch.isalpha() or ch == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            tokens.append(Token("name", text[i:j], text[i:j].lower(), i + 1))
            i = j
        elif ch == '"':
            tok, i = _string(text, i)
            tokens.append(tok)
        else:
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op is None:
                hint = " (use == to compare)" if ch == "=" else ""
                raise ClassAdSyntaxError(f"unexpected character {ch!r}{hint}", i + 1)
            tokens.append(Token("op", op, op, i + 1))
            i += len(op)
    tokens.append(Token("end", "", None, n + 1))
    return tokens
