#!/usr/bin/env python3
"""Carry shipped results over a template edit that does not change the kernels.

A result's template_hash covers the template and every file of templates/lib, so any edit (a comment,
a new field) makes every shipped row "an earlier version": served only where nothing current exists,
marked stale. This script re-renders each row of db/data/*.tsv whose hash is the old tree's with the
old templates and with the current ones, and moves the row to the current hash only when the two
CUDA sources are identical once comments are taken out (the tool's opening comment names the hash and problem;
the others explain the code and cannot change what NVRTC makes of it).
Rows whose kernels changed keep their old hash: they must be re-measured.

The old templates come from git: every commit that touched templates/ is unpacked (under --work) and
the op's hash there found; a row whose hash no commit produces is kept as it is, and the script then exits 1
(such a row was stamped from templates never committed). It refuses to start when the binary's embedded templates
are not templates/ (rebuild it after a template edit, then restamp).

usage: scripts/maint/restamp-shipped.py [--sptune build/sptune] [--work /tmp/sptune-restamp] [--dry-run]
"""
import argparse
import glob
import os
import re
import subprocess
import sys

HEAD = re.compile(r"\A/\* sptune .*?\*/\n", re.S)
# C comments (the kernels have no string literal holding "/*" or "//": their strings are PTX)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
HASH = re.compile(r"\(content ([0-9a-f]{64})\)")


def render(sptune, templates, op, gpu, config, problem):
    env = dict(os.environ)
    if templates:
        env["SPTUNE_TEMPLATES"] = templates
    else:
        env.pop("SPTUNE_TEMPLATES", None)
    cmd = [sptune, "gen", op, "--gpu", gpu] + (["--config", config] if config else []) + \
          (["--shape", problem] if problem else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, None
    m = HASH.search(r.stdout)
    return (m.group(1) if m else None), COMMENT.sub("", HEAD.sub("", r.stdout, count=1))


def history(sptune, work, ops):
    """{(op, hash): templates dir} over the commits that touched templates/."""
    found = {}
    commits = subprocess.run(["git", "log", "--format=%H", "--", "templates"], capture_output=True, text=True,
                             check=True).stdout.split()
    for c in commits:
        d = os.path.join(work, c[:12])
        if not os.path.isdir(os.path.join(d, "templates")):
            os.makedirs(d, exist_ok=True)
            tar = subprocess.run(["git", "archive", c, "templates"], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", d], input=tar, check=True)
        for op in ops:
            h, _ = render(sptune, os.path.join(d, "templates"), op, "h200", "", "")
            if h and (op, h) not in found:
                found[(op, h)] = os.path.join(d, "templates")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sptune", default="build/sptune")
    ap.add_argument("--work", default="/tmp/sptune-restamp")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    tables = {}   # path -> (lines, column index)
    for path in sorted(glob.glob("db/data/*.tsv")):
        lines = open(path).read().split("\n")
        tables[path] = (lines, {c: i for i, c in enumerate(lines[1].split("\t"))})
    ops = {line.split("\t")[ci["template"]] for lines, ci in tables.values() for line in lines[2:] if line}
    # the hash covers the templates only: a row already at its op's current hash stays without rendering
    current = {op: render(a.sptune, None, op, "h200", "", "")[0] for op in ops}
    # a binary built before the last template edit would stamp rows with a hash no commit produces
    tree = {op: render(a.sptune, os.path.abspath("templates"), op, "h200", "", "")[0] for op in ops}
    stale = sorted(op for op in ops if tree[op] != current[op])
    if stale:
        sys.exit(f"{a.sptune} embeds templates other than templates/ ({', '.join(stale)}): rebuild it first")
    trees = history(a.sptune, a.work, sorted(ops))
    moved = kept = 0
    unknown = {}   # op -> rows whose hash neither the current templates nor any commit produces
    for path, (lines, ci) in tables.items():
        memo = {}
        for n, line in enumerate(lines[2:], start=2):
            if not line:
                continue
            f = line.split("\t")
            op, h, gpu = f[ci["template"]], f[ci["template_hash"]], f[ci["gpu_profile"]]
            key = (op, h, gpu, f[ci["config"]], f[ci["problem"]])
            if key not in memo:
                memo[key] = None
                if h != current[op] and (op, h) in trees:
                    old_hash, old = render(a.sptune, trees[(op, h)], op, gpu, key[3], key[4])
                    new_hash, new = render(a.sptune, None, op, gpu, key[3], key[4])
                    if old_hash == h and new is not None and old == new and new_hash != h:
                        memo[key] = new_hash
            if memo[key]:
                f[ci["template_hash"]] = memo[key]
                lines[n] = "\t".join(f)
                moved += 1
            else:
                kept += 1
                if h != current[op] and (op, h) not in trees:
                    unknown[op] = unknown.get(op, 0) + 1
        if not a.dry_run:
            open(path, "w").write("\n".join(lines))
    print(f"{moved} rows moved to the current template hash, {kept} kept", file=sys.stderr)
    if unknown:
        # such rows stay stale for good: they were stamped from templates that were never committed
        sys.exit("rows whose template hash no commit of templates/ produces (stamped from an uncommitted tree?): " +
                 ", ".join(f"{op} {n}" for op, n in sorted(unknown.items())) +
                 "; take the tables back to their committed state (git checkout db/data) and restamp again")


if __name__ == "__main__":
    main()
