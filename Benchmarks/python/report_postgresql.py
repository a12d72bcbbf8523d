"""Collects one PostgreSQL benchmark run (Benchmarks/run-postgresql) into
results/<output>.json (median seconds per peer, shaped like latest.json with the
server's version), <output>-details.json and <output>.md."""
import datetime
import json
import os
import platform
import sys

work, results, output, count, runs, warmup, peers, *workloads = sys.argv[1:]
count, runs, warmup = int(count), int(runs), int(warmup)
ALL = ["raw", "opencoredata", "fluent", "sqlalchemy"]
peers = [p for p in ALL if p in peers.split()]
NAMES = {"raw": "raw postgres-nio", "opencoredata": "OpenCoreData", "fluent": "Fluent", "sqlalchemy": "SQLAlchemy ORM"}
TRAITS = {"raw": ("no", "no"), "opencoredata": ("yes", "yes"), "fluent": ("no", "per model (changed fields)"),
          "sqlalchemy": ("yes", "yes")}
# The bar: ahead of Fluent and SQLAlchemy, within 2x of raw postgres-nio
# (W5b is one DELETE for every peer: judged against raw alone).
LIMIT = 2.0


def load(name):
    path = os.path.join(work, name)
    return json.load(open(path)) if os.path.exists(path) else None


report = {"server_version": None, "workloads": {}}
details = {
    "count": count, "runs": runs, "warmup": warmup,
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                "load_average": [round(x, 2) for x in os.getloadavg()]},
    "workloads": {},
}
titles, failures = {}, []
for w in workloads:
    swift = load(f"{w}.json")
    alchemy = load(f"{w}.sqlalchemy.json")
    expected = swift["expected_checksum"] if swift else None
    if swift:
        report["server_version"] = swift["server_version"]
        titles[w] = swift["title"]
    medians, info = {}, {}
    for peer in peers:
        if peer == "sqlalchemy":
            if not alchemy:
                continue
            entry = alchemy["peers"]["sqlalchemy"]
            entry["peak_mb"] = round(alchemy["peak_mb"], 1)
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
with open(os.path.join(results, f"{output}-details.json"), "w") as f:
    json.dump(details, f, indent=2)
    f.write("\n")


def title(w):
    t = titles.get(w, w).replace("{n/100}", f"{count // 100:,}").replace("{n/10}", f"{count // 10:,}").replace("{n}", f"{count:,}")
    return f"{w}: {t}"


def secs(s):
    return f"{s:.4f}" if s < 10 else f"{s:.2f}"


lines = [
    "# OpenCoreData benchmarks on PostgreSQL",
    "",
    f"PostgreSQL {report['server_version']} (one local server for every peer, its default durability: "
    f"`synchronous_commit = on`); {count:,} objects; median of {runs} runs after {warmup} warm-up (Swift peers "
    f"interleaved in one process, SQLAlchemy in its own); every peer on the same tables (Core Data's layout), "
    f"write runs on a schema of their own emptied or refilled outside the timer; each timer runs from after "
    f"the connection opened to the last commit or row. Machine: {details['machine']['cpus']} CPUs, load average "
    f"{details['machine']['load_average'][0]} at the end; {details['date']}.",
    "",
    f"Seconds (median), and in bold the ratio to raw postgres-nio measured in the same run. The bar: OpenCoreData "
    f"ahead of Fluent and SQLAlchemy, and within {LIMIT:g}x of raw.",
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
        # A tie within 5% counts as met.
        ahead = w == "W5b" or all(m["opencoredata"] <= m[p] * 1.05 for p in ("fluent", "sqlalchemy") if p in m)
        if ratio > LIMIT * 1.05:
            verdict = f"not met ({ratio:.2f}x > {LIMIT:g}x)"
        else:
            verdict = "met" if ahead else "not ahead of all peers"
    lines.append(f"| {title(w)} | " + " | ".join(cells) + f" | {verdict} |")
    for key in sorted({k for p in peers for k in details["workloads"][w]["peers"].get(p, {}).get("parts", {})}):
        part_cells = []
        for p in peers:
            part = details["workloads"][w]["peers"].get(p, {}).get("parts", {}).get(key)
            part_cells.append(secs(part["median"]) if part else "")
        lines.append(f"| &nbsp;&nbsp;{w} {key} | " + " | ".join(part_cells) + " | |")

skipped = os.environ.get("OCD_BENCH_SKIP", "").split()
if skipped:
    lines += ["", "Not run (`--skip`): " + ", ".join(f"{NAMES.get(s.split(':')[1], s)} in {s.split(':')[0]}" for s in skipped if ":" in s) + "."]
lines += ["", "Peak memory (MiB, each peer in a process of its own):", "",
          "| workload | " + " | ".join(NAMES[p] for p in peers) + " |", "|---|" + "---|" * len(peers)]
for w in workloads:
    cells = []
    for p in peers:
        mb = details["workloads"][w]["peers"].get(p, {}).get("peak_mb")
        cells.append(f"{mb:.0f}" if mb is not None else "—")
    lines.append(f"| {w} | " + " | ".join(cells) + " |")
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
