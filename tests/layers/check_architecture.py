#!/usr/bin/env python3
"""ARCHITECTURE.md's "Where is ..." table, checked against the tree.

Every file a row names must exist, and every symbol it names after a file
must occur in that file: a row that points at code which moved or was
renamed fails the suite instead of misleading the next reader.

In the "go to" cell, a backticked path (containing '/', relative to the
repository root or to src/) names a file; a backticked identifier after it
(`name`, `Class::member`, `KILN_SETTING`) names something in that file. A
parenthesised list of identifiers after a path belongs to that path.

    check_architecture.py --root REPO [--self-test]
"""
import argparse
import os
import re
import sys

TICK = re.compile(r"`([^`]+)`")
IN_PATH = re.compile(r"\s+in\s+`([^`\s]+/[^`\s]+)`")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_~][A-Za-z0-9_]*)*(\(\))?$")


def table_rows(text):
    """The (looking for, go to) cells of the "Where is" table."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("## "):
            inside = line.startswith("## Where is")
            continue
        if not inside or not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0] != "looking for":
            rows.append((cells[0], cells[1]))
    return rows


def resolve(root, path):
    for candidate in (path, os.path.join("src", path)):
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def check(root, text):
    """Problems found, as strings; empty when the table is true."""
    problems = []
    rows = table_rows(text)
    if not rows:
        return ["no \"Where is\" table found"]
    cache = {}
    for looking, goto in rows:
        current = None
        for m in TICK.finditer(goto):
            token = m.group(1)
            if "/" in token and " " not in token:
                current = resolve(root, token)
                if current is None:
                    problems.append(f"'{looking}': no file {token}")
                continue
            if not IDENT.match(token):
                continue
            # "`name` in `path`": the name belongs to the path that follows.
            where = current
            after = IN_PATH.match(goto, m.end())
            if after:
                where = resolve(root, after.group(1))
                if where is None:
                    continue  # reported when the path itself is read
            if where is None:
                continue
            current_for_name = where
            if current_for_name not in cache:
                with open(os.path.join(root, current_for_name), encoding="utf-8",
                          errors="replace") as f:
                    cache[current_for_name] = f.read()
            body = cache[current_for_name]
            name = token.rstrip("()")
            parts = name.split("::")
            if name not in body and not all(p in body for p in parts):
                problems.append(f"'{looking}': {current_for_name} has no {name}")
    return problems


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "src", "core"))
        with open(os.path.join(d, "src", "core", "keys.cpp"), "w") as f:
            f.write("Hash128 job_key(...) {}\nstruct Store { void put_job(); };\n")
        good = ("## Where is ...\n| looking for | go to |\n|---|---|\n"
                "| a key | `src/core/keys.cpp` `job_key`, `Store::put_job` |\n")
        assert check(d, good) == [], check(d, good)
        assert check(d, good.replace("job_key", "job_keys"))  # a renamed symbol
        assert check(d, good.replace("core/keys", "core/key"))  # a moved file
        assert check(d, good.replace("`src/core/keys.cpp`", "`core/keys.cpp`")) == []
        assert check(d, "no table") != []
        later = ("## Where is ...\n| looking for | go to |\n|---|---|\n"
                 "| a key | `src/x.cpp` (through `job_key` in `src/core/keys.cpp`) |\n")
        open(os.path.join(d, "src", "x.cpp"), "w").close()
        assert check(d, later) == [], check(d, later)
    print("self-test passed")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return 0
    with open(os.path.join(args.root, "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    problems = check(args.root, text)
    for p in problems:
        print("ARCHITECTURE.md:", p)
    n = len(table_rows(text))
    if problems:
        print(f"{len(problems)} problems in the {n} rows of the \"Where is\" table")
        return 1
    print(f"the {n} rows of ARCHITECTURE.md's \"Where is\" table name files and symbols that exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())
