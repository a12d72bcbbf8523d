"""SQLAlchemy's ORM (psycopg 3) on the PostgreSQL benchmark workloads.

The PostgreSQL counterpart of bench.py: the same workloads, data and checksums,
on the Core Data layout (`zperson`, `zparent`, `zchild`, `z_primarykey`, all
lowercase) that the Swift `prepare` command creates in a PostgreSQL database, in
several schemas:

    bench_people        the persons (read-only)
    bench_family        the parents and their children (read-only)
    bench_w_sqlalchemy  this peer's write schema, with the functions
                        bench_reset_empty() and bench_reset_people()

Each schema is reached through the connection's search_path, with one engine per
schema (created before any timer). Used the way an SQLAlchemy application would:
declarative mapped classes, one Session, one commit per save, lazy-loaded
relationships.

    python bench_postgresql.py version
    python bench_postgresql.py run --workload W1 --count N --runs 7 --warmup 1 --url postgres://USER@HOST:PORT/DB

`run` prints one JSON object like bench.py's, with "server_version" (PostgreSQL's
`SHOW server_version`) in place of "sqlite_version", and the peer "sqlalchemy".
"""
import argparse
import json
import os
import re
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench import Checksum, byte_sum, summary  # noqa: E402

from sqlalchemy import BigInteger, Double, ForeignKey, String, create_engine, delete, func, select  # noqa: E402
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, selectinload  # noqa: E402

PEER = "sqlalchemy"
PEOPLE_SCHEMA = "bench_people"
FAMILY_SCHEMA = "bench_family"
WRITE_SCHEMA = "bench_w_sqlalchemy"


class Base(DeclarativeBase):
    pass


# Core Data's tables and columns were created unquoted, so PostgreSQL folded them to
# lowercase; SQLAlchemy quotes mixed-case names, so they are spelled lowercase here.
class Person(Base):
    __tablename__ = "zperson"
    id: Mapped[int] = mapped_column("z_pk", BigInteger, primary_key=True, autoincrement=False)
    entity: Mapped[int] = mapped_column("z_ent", BigInteger)
    version: Mapped[int] = mapped_column("z_opt", BigInteger)
    name: Mapped[str] = mapped_column("zname", String)
    age: Mapped[int] = mapped_column("zage", BigInteger)
    score: Mapped[float] = mapped_column("zscore", Double)
    email: Mapped[str] = mapped_column("zemail", String)
    joined: Mapped[float] = mapped_column("zjoined", Double)


class Parent(Base):
    __tablename__ = "zparent"
    id: Mapped[int] = mapped_column("z_pk", BigInteger, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column("zname", String)
    children: Mapped[list["Child"]] = relationship(back_populates="parent")


class Child(Base):
    __tablename__ = "zchild"
    id: Mapped[int] = mapped_column("z_pk", BigInteger, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column("zname", String)
    parent_id: Mapped[int] = mapped_column("zparent", BigInteger, ForeignKey("zparent.z_pk"))
    parent: Mapped[Parent] = relationship(back_populates="children")


def sqlalchemy_url(url):
    """postgres://USER@HOST:PORT/DB -> postgresql+psycopg://USER@HOST:PORT/DB."""
    converted, n = re.subn(r"^postgres(?:ql)?(?:\+\w+)?://", "postgresql+psycopg://", url)
    if n != 1:
        sys.exit(f"not a PostgreSQL URL: {url}")
    return converted


def engine(url, schema):
    return create_engine(sqlalchemy_url(url), connect_args={"options": f"-csearch_path={schema}"})


def opened(e):
    """A Session whose connection is already open.

    Opening comes before the timer (fairness rule 4) and closing after it, as for
    the Swift peers: the timer stops when the last commit or row has returned.
    """
    session = Session(e)
    session.connection()
    return session


# The deterministic data (Benchmarks/Sources/OpenCoreDataBenchmarks/Support.swift).
def person(i, entity):
    return Person(id=i + 1, entity=entity, version=1, name=f"name {i}", age=i % 100, score=i * 0.5,
                  email=f"user {i}@example.com", joined=float(i))


class Env:
    def __init__(self, url, count):
        self.count = count
        self.people = engine(url, PEOPLE_SCHEMA)
        self.family = engine(url, FAMILY_SCHEMA)
        self.write = engine(url, WRITE_SCHEMA)

    def dispose(self):
        for e in (self.people, self.family, self.write):
            e.dispose()


def reset(session, function):
    """Empties or refills the write schema (before the timer) and keeps the connection open."""
    session.connection().exec_driver_sql(f"SELECT {WRITE_SCHEMA}.{function}()")
    session.commit()
    session.connection()


def written_checksum(env):
    c = Checksum()
    with env.write.connect() as connection:
        for _pk, _ent, _opt, name, age, score, email, joined in connection.exec_driver_sql(
                "SELECT z_pk, z_ent, z_opt, zname, zage, zscore, zemail, zjoined FROM zperson"):
            c.rows += 1
            c.ages += age
            c.scores2 += int(score * 2)
            c.joined += int(joined)
            c.text += byte_sum(name) + byte_sum(email)
    return str(c)


def remaining_persons(env):
    with env.write.connect() as connection:
        return connection.exec_driver_sql("SELECT COUNT(*) FROM zperson").scalar()


def entity_number(session):
    return session.connection().exec_driver_sql("SELECT z_ent FROM z_primarykey WHERE z_name = 'Person'").scalar()


# Each workload returns (seconds, parts, checksum).

def w1(env):
    with opened(env.write) as session:
        reset(session, "bench_reset_empty")
        entity = entity_number(session)
        session.commit()
        session.connection()
        start = time.perf_counter()
        session.add_all([person(i, entity) for i in range(env.count)])
        session.commit()
        seconds = time.perf_counter() - start
    return seconds, {}, written_checksum(env)


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
    with opened(env.write) as session:
        reset(session, "bench_reset_people")
        people = session.scalars(select(Person)).all()
        for p in people:
            if p.age < 10:
                change(p)
        start = time.perf_counter()
        session.commit()
        seconds = time.perf_counter() - start
    return seconds, {}, written_checksum(env)


def w4b(env):
    with opened(env.write) as session:
        reset(session, "bench_reset_people")
        start = time.perf_counter()
        for p in session.scalars(select(Person).where(Person.age < 10)).all():
            change(p)
        session.commit()
        seconds = time.perf_counter() - start
    return seconds, {}, written_checksum(env)


def w5a(env):
    deleted = 0
    with opened(env.write) as session:
        reset(session, "bench_reset_people")
        start = time.perf_counter()
        for p in session.scalars(select(Person)).all():
            session.delete(p)
            deleted += 1
        session.commit()
        seconds = time.perf_counter() - start
    return seconds, {}, f"deleted={deleted} remaining={remaining_persons(env)}"


def w5b(env):
    with opened(env.write) as session:
        reset(session, "bench_reset_people")
        before = session.scalar(select(func.count()).select_from(Person))
        session.commit()
        session.connection()
        start = time.perf_counter()
        session.execute(delete(Person))
        session.commit()
        seconds = time.perf_counter() - start
    remaining = remaining_persons(env)
    return seconds, {}, f"deleted={before - remaining} remaining={remaining}"


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


WORKLOADS = {"W1": w1, "W2": w2, "W3": w3, "W4a": w4a, "W4b": w4b, "W5a": w5a, "W5b": w5b,
             "W6a": w6a, "W6b": w6b, "W7": w7}


def server_version(env):
    with env.people.connect() as connection:
        return connection.exec_driver_sql("SHOW server_version").scalar()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["version", "run"])
    parser.add_argument("--workload", default="W1")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--url", help="postgres://USER@HOST:PORT/DB")
    args = parser.parse_args()
    if args.command == "version":
        import psycopg
        import sqlalchemy
        print(json.dumps({"sqlalchemy": sqlalchemy.__version__, "psycopg": psycopg.__version__}))
        return
    workload = WORKLOADS.get(args.workload)
    if workload is None:
        sys.exit(f"unknown workload {args.workload}")
    if not args.url:
        sys.exit("run needs --url postgres://USER@HOST:PORT/DB")
    env = Env(args.url, args.count)
    version = server_version(env)
    samples, parts, checksum = [], {}, None
    for run in range(args.warmup + args.runs):
        seconds, run_parts, run_checksum = workload(env)
        if checksum is not None and run_checksum != checksum:
            sys.exit(f"{args.workload}: checksum changed between runs: {run_checksum} vs {checksum}")
        checksum = run_checksum
        warm = run < args.warmup
        print(f"{args.workload} {PEER}{' (warm-up)' if warm else ''} {seconds:.4f} s", file=sys.stderr)
        if not warm:
            samples.append(seconds)
            for key, value in run_parts.items():
                parts.setdefault(key, []).append(value)
    env.dispose()
    entry = summary(samples)
    entry["samples"] = samples
    entry["checksum"] = checksum
    if parts:
        entry["parts"] = {key: summary(values) for key, values in parts.items()}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"workload": args.workload, "count": args.count, "server_version": version,
                      "peak_mb": peak_mb, "peers": {PEER: entry}}, sort_keys=True))


if __name__ == "__main__":
    main()
