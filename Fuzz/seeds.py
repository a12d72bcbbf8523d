#!/usr/bin/env python3
"""Builds the seed corpus of each parser for Fuzz/run, from real files.

    python3 Fuzz/seeds.py OUT [FIXTURE_ROOT ...]

OUT/<parser>/ receives: the committed seeds (Fuzz/Seeds/<parser>), the inputs
that once crashed (Fuzz/Regressions/<parser>), and what the fixture roots hold:
predicate format strings (the case files' "format" fields), Xcode model
`contents` files, compiled models (.mom), from every SQLite store its model
cache (Z_MODELCACHE.Z_CONTENT, and the compiled model inside it) and metadata property list (Z_METADATA.Z_PLIST),
every blob that is a keyed archive, and every `xcmapping.xml`. Files are named
by their content's hash, so a seed found twice is kept once.
"""
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import zlib

PARSERS = ["predicateFormat", "xcodeModel", "compiledModel", "modelCache", "keyedArchive",
           "propertyList", "mappingModel", "dumpFile", "dumpCSV"]
LARGEST = 1_000_000  # bytes: larger files slow every mutation and add little


def add(out, parser, data):
    if not data or len(data) > LARGEST:
        return
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, parser, name), "wb") as f:
        f.write(data)


def from_store(out, path):
    # A copy: a fixture store is never opened in place.
    with tempfile.TemporaryDirectory() as folder:
        copy = os.path.join(folder, "store.sqlite")
        shutil.copyfile(path, copy)
        try:
            db = sqlite3.connect(copy)
            tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            if "Z_MODELCACHE" in tables:
                for (blob,) in db.execute("SELECT Z_CONTENT FROM Z_MODELCACHE"):
                    add(out, "modelCache", blob)
                    # Inside, raw DEFLATE: a compiled model, a keyed archive.
                    try:
                        model = zlib.decompress(blob, -15)
                    except zlib.error:
                        continue
                    add(out, "compiledModel", model)
                    add(out, "keyedArchive", model)
            if "Z_METADATA" in tables:
                for (blob,) in db.execute("SELECT Z_PLIST FROM Z_METADATA"):
                    add(out, "propertyList", blob)
            # Keyed archives in rows (transformable values): a few per column.
            for table in tables:
                columns = [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]
                for column in columns:
                    query = (f'SELECT "{column}" FROM "{table}" WHERE typeof("{column}") = \'blob\' '
                             f'AND instr("{column}", X\'2461726368697665\') > 0 LIMIT 3')  # "$archive"
                    for (blob,) in db.execute(query):
                        add(out, "keyedArchive", blob)
            db.close()
        except sqlite3.DatabaseError:
            pass


def from_root(out, root):
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if name == "contents" and folder.endswith(".xcdatamodel"):
                add(out, "xcodeModel", open(path, "rb").read())
            elif name.endswith(".mom"):
                data = open(path, "rb").read()
                add(out, "compiledModel", data)
                add(out, "keyedArchive", data)
                add(out, "propertyList", data)
            elif name == "xcmapping.xml":
                add(out, "mappingModel", open(path, "rb").read())
            elif name.endswith(".sqlite"):
                from_store(out, path)
            elif name.endswith(".json") and "predicate" in path.lower() or name == "gnustep-cases.json":
                try:
                    cases = json.load(open(path)).get("cases", [])
                except (ValueError, AttributeError):
                    continue
                for case in cases:
                    if isinstance(case, dict) and isinstance(case.get("format"), str):
                        add(out, "predicateFormat", case["format"].encode())


def main():
    out, roots = sys.argv[1], sys.argv[2:]
    here = os.path.dirname(os.path.abspath(__file__))
    for parser in PARSERS:
        os.makedirs(os.path.join(out, parser), exist_ok=True)
        for kept in ("Seeds", "Regressions"):
            folder = os.path.join(here, kept, parser)
            if os.path.isdir(folder):
                for name in os.listdir(folder):
                    add(out, parser, open(os.path.join(folder, name), "rb").read())
    for root in roots:
        if os.path.isdir(root):
            from_root(out, root)
    for parser in PARSERS:
        print(f"{parser}: {len(os.listdir(os.path.join(out, parser)))} seeds")


if __name__ == "__main__":
    main()
