"""Collects one benchmark run (Benchmarks/run) into results/<output>.json (the
issue's shape: median seconds per peer), <output>-details.json and <output>.md."""
import datetime
import json
import os
import platform
import sys

work, results, output, count, runs, warmup, bound, peers, *workloads = sys.argv[1:]
count, runs, warmup, bound = int(count), int(runs), int(warmup), float(bound)
peers = peers.split()
ALL = ["raw", "opencoredata", "grdb", "sqlalchemy"]
peers = [p for p in ALL if p in peers]
NAMES = {"raw": "raw C", "opencoredata": "OpenCoreData", "grdb": "GRDB records", "sqlalchemy": "SQLAlchemy ORM"}
TRAITS = {"raw": ("no", "no"), "opencoredata": ("yes", "yes"), "grdb": ("no", "no (structs)"), "sqlalchemy": ("yes", "yes")}


def load(name):
    path = os.path.join(work, name)
    return json.load(open(path)) if os.path.exists(path) else None


report = {"sqlite_version": None, "workloads": {}}
details = {
    "count": count, "runs": runs, "warmup": warmup,
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                "load_average": [round(x, 2) for x in os.getloadavg()]},
    "workloads": {},
}
titles = {}
failures = []
for w in workloads:
    swift = load(f"{w}.json")
    alchemy = load(f"{w}.sqlalchemy.json")
    expected = swift["expected_checksum"] if swift else None
    if swift:
        report["sqlite_version"] = swift["sqlite_version"]
        titles[w] = swift["title"]
    medians, info = {}, {}
    for peer in peers:
        if peer == "sqlalchemy":
            if not alchemy:
                continue
            entry = alchemy["peers"]["sqlalchemy"]
            entry["peak_mb"] = round(alchemy["peak_mb"], 1)
            if alchemy["sqlite_version"] != report["sqlite_version"]:
                failures.append(f"{w}: SQLAlchemy's SQLite is {alchemy['sqlite_version']}, not {report['sqlite_version']}")
            if expected is not None and entry["checksum"] != expected:
                failures.append(f"{w}: SQLAlchemy checksum {entry['checksum']} != {expected}")
        else:
            if not swift or peer not in swift["peers"]:
                continue
            entry = swift["peers"][peer]
            memory = load(f"{w}.{peer}.memory.json")
            entry["peak_mb"] = round(memory["peak_mb"], 1) if memory else None
        medians[peer] = entry["median"]
        info[peer] = entry
    report["workloads"][w] = medians
    details["workloads"][w] = {"title": titles.get(w, w), "expected_checksum": expected, "peers": info}

with open(os.path.join(results, f"{output}.json"), "w") as f:
    json.dump(report, f, indent=2)
    f.write("\n")
frc = load("frc.json")   # the fetched results controller workload (OpenCoreData only)
if frc:
    details["frc"] = frc
with open(os.path.join(results, f"{output}-details.json"), "w") as f:
    json.dump(details, f, indent=2)
    f.write("\n")


def title(w):
    t = titles.get(w, w).replace("{10n}", f"{count * 10:,}").replace("{n/100}", f"{count // 100:,}").replace("{n/10}", f"{count // 10:,}").replace("{n}", f"{count:,}")
    return f"{w}{' (synchronous=FULL)' if w.endswith('-full') else ''}: {t}"


def secs(s):
    return f"{s:.4f}" if s < 10 else f"{s:.2f}"


BARS = {"W1": 2.5, "W2": 2.5, "M1": 2.0}
lines = [
    "# OpenCoreData benchmarks",
    "",
    f"SQLite {report['sqlite_version']} (the system library, for every peer); {count:,} objects; median of {runs} runs "
    f"after {warmup} warm-up (Swift peers interleaved in one process, SQLAlchemy in its own); `journal_mode=WAL`, "
    f"`synchronous=NORMAL` set on every connection; a fresh database file for each write run; each timer runs "
    f"from after the open to the last commit or row, the close comes after it. Machine: "
    f"{details['machine']['cpus']} CPUs, load average {details['machine']['load_average'][0]} at the end; {details['date']}.",
    "",
    "Seconds (median), and in bold the ratio to raw SQLite measured in the same run. The bar: OpenCoreData ahead of "
    "GRDB and SQLAlchemy, and within 3x of raw (2.5x for W1 and W2).",
    "",
    "| workload | " + " | ".join(NAMES[p] for p in peers) + " | bar |",
    "|---|" + "---|" * len(peers) + "---|",
]
for w in workloads:
    m = report["workloads"][w]
    raw = m.get("raw")
    cells = []
    for p in peers:
        if p not in m:
            cells.append("—")
        elif p == "raw" or not raw:
            cells.append(secs(m[p]))
        else:
            cells.append(f"{secs(m[p])} (**{m[p] / raw:.1f}x**)")
    verdict = ""
    if "opencoredata" in m and raw:
        ratio = m["opencoredata"] / raw
        limit = BARS.get(w.split("-")[0], 3.0)
        ahead = all(m["opencoredata"] < m[p] for p in ("grdb", "sqlalchemy") if p in m)
        if ratio > limit:
            # Two decimals when one would read as the bar itself (2.52x as "2.5x > 2.5x").
            shown = f"{ratio:.2f}" if round(ratio, 1) <= limit else f"{ratio:.1f}"
            verdict = f"not met ({shown}x > {limit}x)"
        else:
            verdict = "met" if ahead else "not ahead of all peers"
        # W3t (W3 with #Predicate) is judged against W3: within 10%.
        w3 = report["workloads"].get("W3", {}).get("opencoredata")
        if w == "W3t" and w3:
            typed = m["opencoredata"] / w3
            verdict = f"{'met' if typed <= 1.10 else 'not met'} ({typed:.2f}x W3, bar 1.10x)"
    lines.append(f"| {title(w)} | " + " | ".join(cells) + f" | {verdict} |")
    for key in sorted({k for p in peers for k in details["workloads"][w]["peers"].get(p, {}).get("parts", {})}):
        part_cells = []
        for p in peers:
            part = details["workloads"][w]["peers"].get(p, {}).get("parts", {}).get(key)
            part_cells.append(secs(part["median"]) if part else "")
        lines.append(f"| &nbsp;&nbsp;{w} {key} | " + " | ".join(part_cells) + " | |")

lines += ["", "Peak memory (MiB, each peer in a process of its own):", "",
          "| workload | " + " | ".join(NAMES[p] for p in peers) + " |", "|---|" + "---|" * len(peers)]
for w in workloads:
    cells = []
    for p in peers:
        mb = details["workloads"][w]["peers"].get(p, {}).get("peak_mb")
        cells.append(f"{mb:.0f}" if mb is not None else "—")
    lines.append(f"| {w} | " + " | ".join(cells) + " |")
if "M2" in workloads:
    mb = details["workloads"]["M2"]["peers"].get("opencoredata", {}).get("peak_mb")
    if mb is not None:
        ok = mb <= bound
        lines += ["", f"M2 memory bound: OpenCoreData peaked at {mb:.0f} MiB migrating {count:,} objects through objects "
                      f"(batches saved and faulted, associations on disk): {'within' if ok else 'OVER'} the {bound:.0f} MiB bound."]
        if not ok:
            failures.append(f"M2: OpenCoreData peak {mb:.0f} MiB over the {bound:.0f} MiB bound")
if "W1c" in workloads:
    mb = details["workloads"]["W1c"]["peers"].get("opencoredata", {}).get("peak_mb")
    if mb is not None:
        ok = mb <= bound
        lines += ["", f"W1c memory bound: OpenCoreData peaked at {mb:.0f} MiB saving {count:,} objects in chunks of 10k "
                      f"with `reset()`: {'within' if ok else 'OVER'} the {bound:.0f} MiB bound."]
        if not ok:
            failures.append(f"W1c: OpenCoreData peak {mb:.0f} MiB over the {bound:.0f} MiB bound")

if frc:
    lines += ["", f"Fetched results controller (OpenCoreData only; {frc['count']:,} items, batch size {frc['batch_size']}, "
                  f"median of {frc['runs']}): a refetch against reacting to one change (move, insert, delete, each + `processPendingChanges()`).", "",
              "| sections | performFetch (s) | move (s) | insert (s) | delete (s) | one change / refetch |", "|---|---|---|---|---|---|"]
    for l in frc["layouts"]:
        lines.append(f"| {l['sections']} | {l['perform_fetch_median_s']:.4f} | {l['move_median_s']:.6f} | {l['insert_median_s']:.6f} | "
                     f"{l['delete_median_s']:.6f} | {100 * l['one_change_fraction_of_refetch']:.2f} % |")

lines += ["", "| peer | identity map | change tracking |", "|---|---|---|"]
lines += [f"| {NAMES[p]} | {TRAITS[p][0]} | {TRAITS[p][1]} |" for p in peers]
lines += ["", "Checksums (every peer's matched):", ""]
lines += [f"- {w}: `{details['workloads'][w]['expected_checksum']}`" for w in workloads]
if failures:
    lines += ["", "Problems:", ""] + [f"- {f}" for f in failures]
lines.append("")
with open(os.path.join(results, f"{output}.md"), "w") as f:
    f.write("\n".join(lines))
print("\n".join(lines))
if failures:
    sys.exit("benchmark problems: " + "; ".join(failures))
