"""A small YAML reader for the subset our deployment files use.

Used by check_deploy.py when PyYAML is not installed (python3 on a bare Debian
has no yaml module). Supports: several documents (`---`), block mappings and
sequences (including sequences of mappings, `- key: value`), plain, single- and
double-quoted scalars, flow sequences of scalars (`["a", "b"]`), folded and
literal block scalars (`>-`, `|`), and comments. Scalars become str, int,
float, bool or None like YAML 1.2's core schema. Anything else (anchors, tags,
flow mappings, multi-line plain scalars) raises ValueError with the line
number, so a file outside the subset fails loudly rather than parsing wrong.
"""

import re

_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$")


class _Line:
    def __init__(self, number, indent, text):
        self.number = number  # 1-based line number in the file
        self.indent = indent  # leading spaces
        self.text = text      # content without indent and trailing comment


def _strip_comment(s):
    """Removes a trailing `# comment` that is outside quotes."""
    quote = None
    for i, ch in enumerate(s):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or s[i - 1] in " \t"):
            return s[:i].rstrip()
    return s.rstrip()


def scalar(token, number=0):
    """Converts one scalar token to a Python value."""
    t = token.strip()
    if not t:
        return None
    if t[0] in "&*!{|>" or t.startswith("? "):
        raise ValueError(f"line {number}: unsupported YAML construct: {t!r}")
    if t[0] == '"':
        if len(t) < 2 or t[-1] != '"':
            raise ValueError(f"line {number}: unterminated string {t!r}")
        return bytes(t[1:-1], "utf-8").decode("unicode_escape")
    if t[0] == "'":
        if len(t) < 2 or t[-1] != "'":
            raise ValueError(f"line {number}: unterminated string {t!r}")
        return t[1:-1].replace("''", "'")
    if t[0] == "[":
        if t[-1] != "]":
            raise ValueError(f"line {number}: unterminated flow sequence {t!r}")
        inner = t[1:-1].strip()
        return [scalar(p, number) for p in inner.split(",")] if inner else []
    if t in ("null", "Null", "NULL", "~"):
        return None
    if t in ("true", "True", "TRUE"):
        return True
    if t in ("false", "False", "FALSE"):
        return False
    if _INT.match(t):
        return int(t)
    if _FLOAT.match(t):
        return float(t)
    return t


def _split_key(text, number):
    """'key: value' -> (key, value-text) or None when text is not a mapping entry."""
    if text[0] in "'\"":
        end = text.find(text[0], 1)
        if end < 0:
            raise ValueError(f"line {number}: unterminated key")
        key, rest = text[1:end], text[end + 1:]
        if not rest.startswith(":"):
            return None
        return key, rest[1:].strip()
    m = re.match(r"^([^\s:'\"\[\]{},#][^:#]*?)\s*:(\s+(.*))?$", text)
    if not m:
        return None
    return m.group(1), (m.group(3) or "").strip()


class _Parser:
    def __init__(self, raw_lines):
        self.raw = raw_lines  # list of (number, raw text)
        self.lines = []
        for number, raw in raw_lines:
            if "\t" in raw[: len(raw) - len(raw.lstrip())]:
                raise ValueError(f"line {number}: tab in indentation")
            text = _strip_comment(raw)
            if text.strip():
                self.lines.append(_Line(number, len(text) - len(text.lstrip(" ")), text.strip()))
        self.pos = 0

    def parse(self):
        if not self.lines:
            return None
        value = self._node(self.lines[0].indent)
        if self.pos < len(self.lines):
            line = self.lines[self.pos]
            raise ValueError(f"line {line.number}: unexpected indentation")
        return value

    def _node(self, indent):
        line = self.lines[self.pos]
        if line.text == "-" or line.text.startswith("- "):
            return self._sequence(indent)
        return self._mapping(indent)

    def _block_scalar(self, style, parent_indent, number):
        """Reads a `|` / `>` block scalar starting after line `number`."""
        folded = style[0] == ">"
        chomp = style[1:] if len(style) > 1 else ""
        body = []
        # Use the raw lines so that comments and blank lines inside stay text.
        start = next(i for i, (n, _) in enumerate(self.raw) if n == number) + 1
        block_indent = None
        i = start
        while i < len(self.raw):
            n, raw = self.raw[i]
            if raw.strip():
                ind = len(raw) - len(raw.lstrip(" "))
                if ind <= parent_indent:
                    break
                if block_indent is None:
                    block_indent = ind
                body.append(raw[block_indent:])
            else:
                body.append("")
            i += 1
        last = self.raw[i - 1][0] if i > start else number
        while self.pos < len(self.lines) and self.lines[self.pos].number <= last:
            self.pos += 1
        while body and body[-1] == "":
            body.pop()
        if folded:
            text = ""
            for j, part in enumerate(body):
                if j == 0:
                    text = part
                elif part == "" or body[j - 1] == "":
                    text += "\n" + part if part else ""
                else:
                    text += " " + part
        else:
            text = "\n".join(body)
        if chomp != "-" and text:
            text += "\n"
        return text

    def _value(self, rest, indent, number):
        """The value after `key:` or `- `: inline scalar, block scalar or nested block."""
        if rest and rest[0] in "|>":
            return self._block_scalar(rest, indent, number)
        if rest:
            return scalar(rest, number)
        if self.pos < len(self.lines) and self.lines[self.pos].indent > indent:
            return self._node(self.lines[self.pos].indent)
        if (self.pos < len(self.lines) and self.lines[self.pos].indent == indent
                and self.lines[self.pos].text.startswith("-")):
            return self._sequence(indent)  # "key:\n- item" at the key's indent
        return None

    def _mapping(self, indent):
        result = {}
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent < indent or line.text.startswith("- ") or line.text == "-":
                break
            if line.indent > indent:
                raise ValueError(f"line {line.number}: unexpected indentation")
            kv = _split_key(line.text, line.number)
            if kv is None:
                raise ValueError(f"line {line.number}: expected 'key: value', got {line.text!r}")
            key, rest = kv
            if key in result:
                raise ValueError(f"line {line.number}: duplicate key {key!r}")
            self.pos += 1
            result[key] = self._value(rest, indent, line.number)
        return result

    def _sequence(self, indent):
        result = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent != indent or not (line.text == "-" or line.text.startswith("- ")):
                if line.indent > indent:
                    raise ValueError(f"line {line.number}: unexpected indentation")
                break
            rest = line.text[1:].strip()
            kv = _split_key(rest, line.number) if rest and rest[0] not in "[\"'" else None
            if kv is None and rest.startswith(("'", '"')):
                kv = _split_key(rest, line.number)
            if kv is not None:
                # "- key: value": a mapping whose first key sits after the dash.
                item_indent = indent + (len(line.text) - len(rest))
                self.lines[self.pos] = _Line(line.number, item_indent, rest)
                result.append(self._mapping(item_indent))
            else:
                self.pos += 1
                result.append(self._value(rest, indent, line.number))
        return result


def load_all(text):
    """Every document of a YAML stream, in order (empty documents skipped)."""
    docs, current = [], []
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.rstrip() == "---" or raw.startswith("--- "):
            docs.append(current)
            current = []
        else:
            current.append((number, raw))
    docs.append(current)
    out = []
    for lines in docs:
        value = _Parser(lines).parse()
        if value is not None:
            out.append(value)
    return out
