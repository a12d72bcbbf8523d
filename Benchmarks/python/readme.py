"""Writes the README's benchmark section from a full run's results
(Benchmarks/results/latest.json and latest-details.json): the table between the
README's `<!-- benchmarks -->` and `<!-- /benchmarks -->` lines, so the figures a
reader sees are always those of the last full run of the code as committed.

    python3 Benchmarks/python/readme.py [README.md] [Benchmarks/results/latest]

Benchmarks/run calls it after a full run written as `latest`."""
import json
import re
import sys

readme = sys.argv[1] if len(sys.argv) > 1 else "README.md"
stem = sys.argv[2] if len(sys.argv) > 2 else "Benchmarks/results/latest"
report = json.load(open(stem + ".json"))
details = json.load(open(stem + "-details.json"))
count = details["count"]
BARS = {"W1": 2.5, "W2": 2.5}
# The workloads the README lists, in order, and how it names them.
ROWS = [
    ("W1", "insert + save {n}"), ("W1s", "1000 saves of 1"), ("W1c", "insert {n} in saves of 10k"),
    ("W2", "fetch {n}, read every attribute"), ("W2f", "fetch as faults, fire every fault"),
    ("W3", "100 indexed fetches of 1,000"), ("W3t", "W3 with `#Predicate`"),
    ("W4a", "save 2 changed attributes of 10,000"), ("W4b", "fetch 10,000, change, save"),
    ("W5a", "delete {n} one by one + save"), ("W5b", "batch delete {n}"),
    ("W6a", "traverse 10,000 parents' to-many faults"), ("W6b", "the same with prefetching"),
    ("W7", "scroll 10,000 in batches of 20"),
]
MEMORY = ["W1", "W2", "W4a", "W5a"]

workloads = report["workloads"]
rows, over, behind = [], [], []
for w, label in ROWS:
    m = workloads.get(w)
    if not m or not m.get("raw") or "opencoredata" not in m:
        continue
    raw = m["raw"]
    ratio = m["opencoredata"] / raw
    grdb = f"{m['grdb'] / raw:.1f}x" if "grdb" in m else "—"
    alchemy = f"{m['sqlalchemy'] / raw:.1f}x" if "sqlalchemy" in m else "—"
    bar = BARS.get(w, 3.0)
    if ratio > bar and w != "W3t":
        over.append(f"{w} ({ratio:.1f}x, bar {bar}x)")
    peers = [m[p] for p in ("grdb", "sqlalchemy") if p in m]
    if peers and m["opencoredata"] > min(peers) * 1.05:
        behind.append(w)
    rows.append(f"| {w}: {label.format(n=f'{count:,}')} | {ratio:.1f}x | {grdb} | {alchemy} |")

memory = []
for w in MEMORY:
    peers = details["workloads"].get(w, {}).get("peers", {})
    ours, grdb = peers.get("opencoredata", {}).get("peak_mb"), peers.get("grdb", {}).get("peak_mb")
    if ours is not None and grdb is not None:
        memory.append(f"{w} {ours:.0f} MiB against GRDB's {grdb:.0f}")

summary = []
summary.append("Within its bar on every workload (3x of raw; 2.5x for W1 and W2)." if not over
               else "Within its bar (3x of raw; 2.5x for W1 and W2) on all but " + ", ".join(over) + ".")
summary.append("Ahead of GRDB records and SQLAlchemy on every workload (a tie within 5% counts)." if not behind
               else "Ahead of GRDB records and SQLAlchemy (a tie within 5% counts) on all but " + ", ".join(behind) + ".")
if memory:
    summary.append("Peak memory: " + "; ".join(memory) + ".")

section = [
    "<!-- benchmarks -->",
    f"From [`Benchmarks/results/latest.md`](Benchmarks/results/latest.md) ({details['date'][:10]}): "
    f"{count:,} objects, median of {details['runs']} runs, one {details['machine']['cpus']}-core machine; "
    "the ratio to raw SQLite in the same run (lower is better).",
    "",
    "| workload | OpenCoreData | GRDB records | SQLAlchemy ORM |",
    "|---|---|---|---|",
    *rows,
    "",
    " ".join(summary),
    "<!-- /benchmarks -->",
]
text = open(readme).read()
pattern = re.compile(r"<!-- benchmarks -->.*?<!-- /benchmarks -->", re.S)
if not pattern.search(text):
    sys.exit(f"{readme} has no <!-- benchmarks --> ... <!-- /benchmarks --> section")
open(readme, "w").write(pattern.sub(lambda _: "\n".join(section), text))
