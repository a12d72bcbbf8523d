"""SQLAlchemy's ORM on the benchmark workloads of /work/shared/docs/benchmarks.md.

The same workloads, data, database files (Core Data's `Z` tables, made by
`OpenCoreDataBenchmarks prepare`) and durability as the Swift peers, used the way
an SQLAlchemy application would: declarative mapped classes, one Session, one
commit per save, lazy-loaded relationships. Benchmarks/run creates a virtual
environment with SQLAlchemy and runs:

    python bench.py version
    python bench.py run --workload W1 --count N --runs 7 --warmup 1 --dir D

`run` prints one JSON object like the Swift executable's, with the peer
"sqlalchemy"; Benchmarks/run checks its checksum against the Swift one.
"""
import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import sys
import time

from sqlalchemy import Float, ForeignKey, Integer, String, create_engine, delete, event, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, selectinload


class Base(DeclarativeBase):
    pass


class Person(Base):
    __tablename__ = "ZPERSON"
    id: Mapped[int] = mapped_column("Z_PK", Integer, primary_key=True, autoincrement=False)
    entity: Mapped[int] = mapped_column("Z_ENT", Integer)
    version: Mapped[int] = mapped_column("Z_OPT", Integer)
    name: Mapped[str] = mapped_column("ZNAME", String)
    age: Mapped[int] = mapped_column("ZAGE", Integer)
    score: Mapped[float] = mapped_column("ZSCORE", Float)
    email: Mapped[str] = mapped_column("ZEMAIL", String)
    joined: Mapped[float] = mapped_column("ZJOINED", Float)


class Parent(Base):
    __tablename__ = "ZPARENT"
    id: Mapped[int] = mapped_column("Z_PK", Integer, primary_key=True)
    name: Mapped[str] = mapped_column("ZNAME", String)
    children: Mapped[list["Child"]] = relationship(back_populates="parent")


class Child(Base):
    __tablename__ = "ZCHILD"
    id: Mapped[int] = mapped_column("Z_PK", Integer, primary_key=True)
    name: Mapped[str] = mapped_column("ZNAME", String)
    parent_id: Mapped[int] = mapped_column("ZPARENT", ForeignKey("ZPARENT.Z_PK"))
    parent: Mapped[Parent] = relationship(back_populates="children")


SYNCHRONOUS = "NORMAL"


def engine(path):
    e = create_engine(f"sqlite:///{path}")

    @event.listens_for(e, "connect")
    def durability(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
        cursor.close()

    return e


def opened(path):
    """A Session whose connection is already open.

    Opening comes before the timer (fairness rule 4) and closing after it, as for
    the Swift peers: the timer stops when the last commit or row has returned; the
    pooled connection closes (and checkpoints the WAL) later.
    """
    session = Session(engine(path))
    session.connection()
    return session


# The deterministic data (Benchmarks/Sources/OpenCoreDataBenchmarks/Support.swift).
def person(i, entity):
    return Person(id=i + 1, entity=entity, version=1, name=f"name {i}", age=i % 100, score=i * 0.5,
                  email=f"user {i}@example.com", joined=float(i))


class Checksum:
    def __init__(self):
        self.rows = self.ages = self.scores2 = self.joined = self.text = 0

    def add(self, p):
        self.rows += 1
        self.ages += p.age
        self.scores2 += int(p.score * 2)
        self.joined += int(p.joined)
        self.text += byte_sum(p.name) + byte_sum(p.email)

    def __str__(self):
        return f"rows={self.rows} age={self.ages} score2={self.scores2} joined={self.joined} text={self.text}"


def byte_sum(s):
    return sum(s.encode()) if s is not None else 0


def written_checksum(path):
    c = Checksum()
    db = sqlite3.connect(path)
    for _pk, _ent, _opt, name, age, score, email, joined in db.execute(
            "SELECT Z_PK, Z_ENT, Z_OPT, ZNAME, ZAGE, ZSCORE, ZEMAIL, ZJOINED FROM ZPERSON"):
        c.rows += 1
        c.ages += age
        c.scores2 += int(score * 2)
        c.joined += int(joined)
        c.text += byte_sum(name) + byte_sum(email)
    db.close()
    return str(c)


def remove_database(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


class Env:
    def __init__(self, directory, count):
        self.dir, self.count = directory, count
        self.empty = f"{directory}/empty.sqlite"
        self.people = f"{directory}/people-{count}.sqlite"
        self.family = f"{directory}/family-{count}.sqlite"

    def fresh_copy(self, source, workload):
        path = f"{self.dir}/{workload}-sqlalchemy.sqlite"
        remove_database(path)
        shutil.copyfile(source, path)
        return path


def entity_number(session):
    return session.connection().exec_driver_sql("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Person'").scalar()


# Each workload returns (seconds, parts, checksum).

def w1(env):
    path = env.fresh_copy(env.empty, "W1")
    with opened(path) as session:
        entity = entity_number(session)
        session.commit()
        start = time.perf_counter()
        session.add_all([person(i, entity) for i in range(env.count)])
        session.commit()
        seconds = time.perf_counter() - start
    checksum = written_checksum(path)
    remove_database(path)
    return seconds, {}, checksum


def w1s(env):
    path = env.fresh_copy(env.empty, "W1s")
    latencies = []
    with opened(path) as session:
        entity = entity_number(session)
        session.commit()
        for i in range(1000):
            start = time.perf_counter()
            session.add(person(i, entity))
            session.commit()
            latencies.append(time.perf_counter() - start)
    checksum = written_checksum(path)
    remove_database(path)
    ordered = sorted(latencies)
    return sum(latencies), {"p50": ordered[len(ordered) // 2], "p99": ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)]}, checksum


def w1c(env):
    path = env.fresh_copy(env.empty, "W1c")
    with opened(path) as session:
        entity = entity_number(session)
        session.commit()
        start = time.perf_counter()
        for first in range(0, env.count, 10_000):
            session.add_all([person(i, entity) for i in range(first, min(env.count, first + 10_000))])
            session.commit()
            session.expunge_all()
        seconds = time.perf_counter() - start
    checksum = written_checksum(path)
    remove_database(path)
    return seconds, {}, checksum


def w2(env):
    c = Checksum()
    with opened(env.people) as session:
        start = time.perf_counter()
        for p in session.scalars(select(Person)).all():
            c.add(p)
        seconds = time.perf_counter() - start
    return seconds, {}, str(c)


def w3(env):
    c = Checksum()
    with opened(env.people) as session:
        start = time.perf_counter()
        for k in range(100):
            for p in session.scalars(select(Person).where(Person.age == k)).all():
                c.rows += 1
                c.scores2 += int(p.score * 2)
        seconds = time.perf_counter() - start
    return seconds, {}, str(c)


def change(p):
    p.score = p.score + 1
    p.email = "x" + p.email


def w4a(env):
    path = env.fresh_copy(env.people, "W4a")
    with opened(path) as session:
        people = session.scalars(select(Person)).all()
        for p in people:
            if p.age < 10:
                change(p)
        start = time.perf_counter()
        session.commit()
        seconds = time.perf_counter() - start
    checksum = written_checksum(path)
    remove_database(path)
    return seconds, {}, checksum


def w4b(env):
    path = env.fresh_copy(env.people, "W4b")
    with opened(path) as session:
        start = time.perf_counter()
        for p in session.scalars(select(Person).where(Person.age < 10)).all():
            change(p)
        session.commit()
        seconds = time.perf_counter() - start
    checksum = written_checksum(path)
    remove_database(path)
    return seconds, {}, checksum


def w5a(env):
    path = env.fresh_copy(env.people, "W5a")
    deleted = 0
    with opened(path) as session:
        start = time.perf_counter()
        for p in session.scalars(select(Person)).all():
            session.delete(p)
            deleted += 1
        session.commit()
        seconds = time.perf_counter() - start
    db = sqlite3.connect(path)
    remaining = db.execute("SELECT COUNT(*) FROM ZPERSON").fetchone()[0]
    db.close()
    remove_database(path)
    return seconds, {}, f"deleted={deleted} remaining={remaining}"


def w5b(env):
    path = env.fresh_copy(env.people, "W5b")
    db = sqlite3.connect(path)
    before = db.execute("SELECT COUNT(*) FROM ZPERSON").fetchone()[0]
    db.close()
    with opened(path) as session:
        start = time.perf_counter()
        session.execute(delete(Person))
        session.commit()
        seconds = time.perf_counter() - start
    db = sqlite3.connect(path)
    remaining = db.execute("SELECT COUNT(*) FROM ZPERSON").fetchone()[0]
    db.close()
    remove_database(path)
    return seconds, {}, f"deleted={before - remaining} remaining={remaining}"


def w6b(env):
    c = Checksum()
    with opened(env.family) as session:
        start = time.perf_counter()
        for parent in session.scalars(select(Parent).options(selectinload(Parent.children))).all():
            c.ages += 1
            for child in parent.children:
                c.rows += 1
                c.text += byte_sum(child.name)
        seconds = time.perf_counter() - start
    return seconds, {}, str(c)


def w6a(env):
    c = Checksum()
    with opened(env.family) as session:
        start = time.perf_counter()
        for parent in session.scalars(select(Parent)).all():
            c.ages += 1
            for child in parent.children:
                c.rows += 1
                c.text += byte_sum(child.name)
        seconds = time.perf_counter() - start
    return seconds, {}, str(c)


def w7(env):
    c = Checksum()
    first = 0.0
    with opened(env.people) as session:
        start = time.perf_counter()
        rows = session.scalars(select(Person).where(Person.age < 10).order_by(Person.id).execution_options(yield_per=20))
        for p in rows:
            c.rows += 1
            c.text += byte_sum(p.name)
            if c.rows == 20:
                first = time.perf_counter() - start
        seconds = time.perf_counter() - start
    return seconds, {"first": first}, str(c)


WORKLOADS = {"W1": w1, "W1s": w1s, "W1c": w1c, "W2": w2, "W2f": w2, "W3": w3, "W4a": w4a, "W4b": w4b,
             "W5a": w5a, "W5b": w5b, "W6a": w6a, "W6b": w6b, "W7": w7}


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["version", "run"])
    parser.add_argument("--workload", default="W1")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--synchronous", default="NORMAL", choices=["NORMAL", "FULL"])
    parser.add_argument("--dir")
    args = parser.parse_args()
    if args.command == "version":
        import sqlalchemy
        print(json.dumps({"sqlite_version": sqlite3.sqlite_version, "sqlalchemy": sqlalchemy.__version__}))
        return
    global SYNCHRONOUS
    SYNCHRONOUS = args.synchronous
    workload = WORKLOADS.get(args.workload)
    if workload is None:
        sys.exit(f"unknown workload {args.workload}")
    env = Env(args.dir, args.count)
    samples, parts, checksum = [], {}, None
    for run in range(args.warmup + args.runs):
        seconds, run_parts, run_checksum = workload(env)
        if checksum is not None and run_checksum != checksum:
            sys.exit(f"{args.workload}: checksum changed between runs: {run_checksum} vs {checksum}")
        checksum = run_checksum
        warm = run < args.warmup
        print(f"{args.workload} sqlalchemy{' (warm-up)' if warm else ''} {seconds:.4f} s", file=sys.stderr)
        if not warm:
            samples.append(seconds)
            for key, value in run_parts.items():
                parts.setdefault(key, []).append(value)
    entry = summary(samples)
    entry["samples"] = samples
    entry["checksum"] = checksum
    if parts:
        entry["parts"] = {key: summary(values) for key, values in parts.items()}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"workload": args.workload, "count": args.count, "sqlite_version": sqlite3.sqlite_version,
                      "peak_mb": peak_mb, "peers": {"sqlalchemy": entry}}, sort_keys=True))


if __name__ == "__main__":
    main()
