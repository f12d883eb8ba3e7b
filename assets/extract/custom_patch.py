# -*- coding: utf-8 -*-
"""Apply ZeroShotPlus custom-diff blocks to Python files (part of swtbench).

The model's code is parsed with this interpreter's own `ast` module so that the grammar is the
one of the Python that will run the tests; it is never executed. Standard library only, no
network. Runs on Python 3.6 and newer; the "parity" style needs `ast.unparse` (Python 3.9+).

Usage:
    python3 custom_patch.py [REQUEST_JSON [RESPONSE_JSON]]

The request is read from REQUEST_JSON, or from standard input; the response is written to
RESPONSE_JSON, or to standard output. Exit status 0 means a response was written (per-file
failures are reported inside it); 2 means the request could not be used.

Request (UTF-8 JSON):
    {"protocol": 1, "style": "parity" | "preserve", "force_tokenize": false,
     "files": [{"path": "tests/test_x.py", "source": "<text>" | null,
                "blocks": [{"kind": "rewrite" | "insert" | ..., "code": "<lines>"}]}]}

Response (ASCII JSON):
    {"protocol": 1, "python": "3.11.7",
     "files": [{"path": ..., "ok": true, "content": "<new text>" | null}
               | {"path": ..., "ok": false, "error": "<why>", "crash": true?}]}
    (content null: the file does not exist and no block creates it; nothing to write. crash:
    the original's script dies on this file with an uncaught exception — an empty rewrite
    block, a null byte, exhausted recursion or memory — and so writes no patch at all.)

Semantics per file entry, blocks in the given order (the caller has already sorted and grouped
them); an entry whose path repeats an earlier one starts from that entry's result:
  * a missing file (source null) is an empty module; when no block inserts into it (nor tries
    to rewrite it), it is left missing;
  * every block's code is dedented (textwrap.dedent) and parsed; a syntax error fails the file;
  * "rewrite": the first statement must be a `def` or `class` (not `async def`); every function
    or class of that kind and name anywhere in the file is replaced (definitions nested inside a
    replaced one are not visited); no match fails the file;
  * "insert": all statements are appended at the end of the module (line numbers, BOF and EOF
    are ignored, as in the original harness);
  * any other kind is ignored.
Styles:
  * parity: the file is re-emitted with `ast.unparse` (as the original harness does), which drops
    comments and reformats everything; the result has no final newline;
  * preserve: only the lines of each replaced definition (decorators included) change, re-indented
    to where the old definition stood; inserts are appended as written, after blank lines; the rest
    of the file keeps its bytes. Definition ends come from `end_lineno` (3.8+) or, on 3.6/3.7, from
    the tokenizer.
"""
from __future__ import print_function

import ast
import io
import json
import re
import sys
import textwrap
import tokenize

PROTOCOL = 1


class Failure(Exception):
    """A reason why one file could not be patched. `crash`: the original's script raises an
    uncaught exception here (so it writes no patch at all) instead of reporting a failure."""

    def __init__(self, message, crash=False):
        Exception.__init__(self, message)
        self.crash = crash


def describe_syntax_error(exc):
    msg = getattr(exc, "msg", None) or str(exc)
    line = getattr(exc, "lineno", None)
    if line:
        return "%s (line %s)" % (msg, line)
    return msg


def parse(text, what):
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as exc:
        # The original parses with Python 3.11, where a null byte is a ValueError it does not
        # catch (3.12 makes it a SyntaxError).
        crash = "\x00" in text or isinstance(exc, (RecursionError, MemoryError))
        raise Failure(
            "%s does not parse: %s" % (what, describe_syntax_error(exc)), crash=crash
        )


def definition_kind(node):
    if isinstance(node, ast.FunctionDef):
        return "function"
    if isinstance(node, ast.ClassDef):
        return "class"
    return None


def rewrite_target(block_tree, number):
    if not block_tree.body:
        # The original indexes the empty body: IndexError.
        raise Failure("block %d (rewrite) contains no statement" % number, crash=True)
    node = block_tree.body[0]
    if definition_kind(node) is None:
        raise Failure(
            "block %d (rewrite) must start with a def or class, not %s"
            % (number, type(node).__name__)
        )
    return node


def find_matches(tree, target):
    """The definitions a NodeTransformer that returns `target` for same-kind, same-name
    definitions would replace: found in field order, not descending into a replaced one."""
    kind = type(target)
    found = []

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if type(child) is kind and child.name == target.name:
                found.append(child)
            else:
                walk(child)

    walk(tree)
    return found


class Replacer(ast.NodeTransformer):
    def __init__(self, target):
        self.target = target
        self.count = 0

    def _maybe_replace(self, node):
        if type(node) is type(self.target) and node.name == self.target.name:
            self.count += 1
            return self.target
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        return self._maybe_replace(node)

    def visit_ClassDef(self, node):
        return self._maybe_replace(node)


# ---------------------------------------------------------------- parity style


def apply_parity(source, blocks):
    if not hasattr(ast, "unparse"):
        raise Failure(
            "the parity style needs Python 3.9 or newer (ast.unparse); this is Python %s"
            % sys.version.split()[0]
        )
    # The original reads the file in text mode: universal newlines.
    text = (source or "").replace("\r\n", "\n").replace("\r", "\n")
    tree = parse(text, "the file")
    for number, block in enumerate(blocks, 1):
        code = textwrap.dedent(block["code"])
        block_tree = parse(code, "block %d" % number)
        if block["kind"] == "rewrite":
            target = rewrite_target(block_tree, number)
            replacer = Replacer(target)
            tree = replacer.visit(tree)
            if not replacer.count:
                raise Failure(
                    "block %d: no %s named %r in the file"
                    % (number, definition_kind(target), target.name)
                )
        elif block["kind"] == "insert":
            tree.body.extend(block_tree.body)
    return ast.unparse(tree)


# ---------------------------------------------------------------- preserve style

LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_keepends(text):
    """Lines as Python's parser counts them (\\r\\n, \\r or \\n), each with its ending."""
    lines = []
    pos = 0
    for m in LINE_BREAK.finditer(text):
        lines.append(text[pos:m.end()])
        pos = m.end()
    if pos < len(text):
        lines.append(text[pos:])
    return lines


def line_body(line):
    return line.rstrip("\r\n")


def line_ending(line):
    return line[len(line_body(line)):]


def tokens_of(text):
    return list(tokenize.generate_tokens(io.StringIO(text).readline))


def end_line_by_tokens(tokens, keyword_row):
    """The last line of the definition whose `def`/`class` keyword is on `keyword_row`."""
    start = None
    for i, tok in enumerate(tokens):
        if (
            tok[0] == tokenize.NAME
            and tok[1] in ("def", "class")
            and tok[2][0] >= keyword_row
        ):
            start = i
            break
    if start is None:
        raise Failure("cannot find the end of a definition (line %d)" % keyword_row)
    i = start
    while i < len(tokens) and tokens[i][0] != tokenize.NEWLINE:
        i += 1
    if i >= len(tokens):
        return tokens[-1][3][0]
    header_end = tokens[i][2][0]
    j = i + 1
    while j < len(tokens) and tokens[j][0] in (tokenize.NL, tokenize.COMMENT):
        j += 1
    if j >= len(tokens) or tokens[j][0] != tokenize.INDENT:
        return header_end  # a one-line body: `def f(): pass`
    depth = 0
    last_newline = header_end
    for tok in tokens[j:]:
        if tok[0] == tokenize.INDENT:
            depth += 1
        elif tok[0] == tokenize.DEDENT:
            depth -= 1
            if depth == 0:
                break
        elif tok[0] == tokenize.NEWLINE:
            last_newline = tok[2][0]
    return last_newline


def span(node, tokens, force_tokenize):
    """(first line, last line) of a definition, decorators included, 1-based."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    end = getattr(node, "end_lineno", None)
    if end is None or force_tokenize:
        # Before 3.8 a decorated definition's lineno is its first decorator; the keyword follows.
        end = end_line_by_tokens(tokens(), node.lineno)
    return first, end


def string_rows(code):
    """Rows (1-based) that begin inside a multi-line string: never re-indented."""
    rows = set()
    try:
        for tok in tokens_of(code):
            srow, erow = tok[2][0], tok[3][0]
            if erow > srow and tok[0] not in (tokenize.NEWLINE, tokenize.NL):
                rows.update(range(srow + 1, erow + 1))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return rows


def lazy_tokens(text):
    cache = []

    def get():
        if not cache:
            try:
                cache.append(tokens_of(text))
            except (tokenize.TokenError, SyntaxError, IndentationError) as exc:
                raise Failure("cannot tokenize: %s" % exc)
        return cache[0]

    return get


def newline_of(text):
    m = LINE_BREAK.search(text)
    return m.group(0) if m else "\n"


def apply_preserve(source, blocks, force_tokenize):
    text = source or ""
    parse(text, "the file")
    newline = newline_of(text)
    for number, block in enumerate(blocks, 1):
        code = textwrap.dedent(block["code"])
        block_tree = parse(code, "block %d" % number)
        if block["kind"] == "rewrite":
            target = rewrite_target(block_tree, number)
            code_lines = [line_body(l) for l in split_keepends(code)]
            b_first, b_end = span(target, lazy_tokens(code), force_tokenize)
            protected = string_rows(code)
            new_rows = list(range(b_first, b_end + 1))
            tree = parse(text, "the file")
            matches = find_matches(tree, target)
            if not matches:
                raise Failure(
                    "block %d: no %s named %r in the file"
                    % (number, definition_kind(target), target.name)
                )
            lines = split_keepends(text)
            file_tokens = lazy_tokens(text)
            spans = sorted(
                (span(m, file_tokens, force_tokenize) for m in matches), reverse=True
            )
            for first, end in spans:
                old_first = lines[first - 1]
                indent = old_first[: len(old_first) - len(old_first.lstrip(" \t\f"))]
                replacement = []
                for row in new_rows:
                    body = code_lines[row - 1]
                    if row in protected:
                        replacement.append(body)
                    elif body.strip():
                        replacement.append(indent + body)
                    else:
                        replacement.append("")
                last_ending = line_ending(lines[end - 1])
                out = [r + newline for r in replacement[:-1]]
                out.append(replacement[-1] + last_ending)
                lines[first - 1 : end] = out
            text = "".join(lines)
            parse(text, "the file after rewriting %r" % target.name)
        elif block["kind"] == "insert":
            if not block_tree.body:
                continue
            code_lines = [line_body(l) for l in split_keepends(code)]
            while code_lines and not code_lines[0].strip():
                code_lines.pop(0)
            while code_lines and not code_lines[-1].strip():
                code_lines.pop()
            if text and not text.endswith(("\n", "\r")):
                text += newline
            if text.strip():
                trailing_blank = 0
                for line in reversed(split_keepends(text)):
                    if line.strip():
                        break
                    trailing_blank += 1
                text += newline * max(0, 2 - trailing_blank)
            text += newline.join(code_lines) + newline
            parse(text, "the file after inserting block %d" % number)
    return text


# ---------------------------------------------------------------- driver


def handle(request):
    if request.get("protocol") != PROTOCOL:
        raise ValueError(
            "protocol %r requested, this script speaks %d" % (request.get("protocol"), PROTOCOL)
        )
    style = request.get("style")
    if style not in ("parity", "preserve"):
        raise ValueError("unknown style %r" % (style,))
    force_tokenize = bool(request.get("force_tokenize"))
    results = []
    # Several entries may name the same file (the model wrote its path in different ways): each
    # one starts from the previous one's result, as the original rewrites the file on disk.
    current = {}
    for item in request["files"]:
        path = item["path"]
        source = current[path] if path in current else item.get("source")
        kinds = set(block["kind"] for block in item["blocks"])
        try:
            if style == "parity":
                content = apply_parity(source, item["blocks"])
            else:
                content = apply_preserve(source, item["blocks"], force_tokenize)
            if source is None and not kinds & {"insert", "rewrite"}:
                # Only blocks of unknown kinds: nothing creates this file. (The original writes
                # an empty file here when the directory exists, and crashes when it does not.)
                content = None
            if content is not None:
                current[path] = content
            results.append({"path": path, "ok": True, "content": content})
        except Failure as exc:
            result = {"path": path, "ok": False, "error": str(exc)}
            if exc.crash:
                result["crash"] = True
            results.append(result)
        except (RecursionError, MemoryError) as exc:
            results.append(
                {"path": path, "ok": False, "error": "%s" % type(exc).__name__, "crash": True}
            )
    return {"protocol": PROTOCOL, "python": sys.version.split()[0], "files": results}


def main(argv):
    if sys.version_info < (3, 6):
        sys.stderr.write("custom_patch.py needs Python 3.6 or newer\n")
        return 2
    try:
        if len(argv) > 1:
            with open(argv[1], "rb") as f:
                raw = f.read()
        else:
            raw = sys.stdin.buffer.read()
        request = json.loads(raw.decode("utf-8"))
        response = handle(request)
    except (ValueError, KeyError, TypeError) as exc:
        sys.stderr.write("custom_patch.py: unusable request: %s\n" % exc)
        return 2
    data = json.dumps(response, ensure_ascii=True)
    if len(argv) > 2:
        with open(argv[2], "w") as f:
            f.write(data)
    else:
        sys.stdout.write(data)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
