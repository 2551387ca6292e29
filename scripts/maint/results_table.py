"""Reading a shipped or exported results table (the text format of db/sp_db_text.h), for the scripts beside it."""
import sys


def read(path, need=("gpu_profile", "template", "problem", "config", "outcome")):
    """(first line, header, rows as lists of fields); stops with a message on anything else."""
    with open(path) as f:
        lines = f.read().split("\n")
    if not lines or not lines[0].startswith("# sptune tuning results v"):
        sys.exit(f"{path}: not a sptune results table (no '# sptune tuning results vN' line)")
    head = lines[1].split("\t") if len(lines) > 1 else []
    for k in need:
        if k not in head:
            sys.exit(f"{path}: no column {k}")
    rows = [l.split("\t") for l in lines[2:] if l]
    for i, r in enumerate(rows):
        if len(r) != len(head):
            sys.exit(f"{path}: row {i + 1} has {len(r)} fields, the header {len(head)}")
    return lines[0], head, rows
