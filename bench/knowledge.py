"""Benchmark: knowledge search at a million passages on Postgres (100,000 on SQLite).

A generated corpus of mixed Chinese/English passages (Zipf vocabularies sharing the company
words 財務, 預算, leave, budget…) plus a labelled set (bench/knowledge_labels.py: real-looking
documents in 繁體, 简体 and English with questions and the passage that answers each). Prints,
per database and size: indexing throughput through the real path (parse, chunk, tokenize, swap)
on a sample, the bulk load and GIN build time, index and table size, search p50/p99 by query
class (1-, 2-, 3-character Chinese, English words, mixed phrases) and recall@5 of the labelled
questions, with the machine's load average while it ran. Each database runs in its own process
and database; `--keep` reuses a corpus already loaded at that size.

Usage: .venv/bin/python bench/knowledge.py [--pg-size 1000000] [--sqlite-size 100000]
       [--queries 60] [--pg postgres://postgres@127.0.0.1:5432/agent_platform_kb_bench]
       [--only sqlite|postgres] [--keep]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Not bench/ itself: a bench module there (markdown.py) would shadow the package of that name.
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench")]
sys.path.append(str(ROOT / "bench"))
from harness import database_ensure  # noqa: E402
from knowledge_labels import DOCUMENTS, QUESTIONS, markdown  # noqa: E402

DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/agent_platform_kb_bench"
# Common Han characters; the vocabulary is made of pairs of them (most Chinese words are two).
HAN = (
    "的一是在不了有和人這中大為上個國我以要他時來用們生到作地於出就分對成會可主發年動同工也能下"
    "過子說產種面而方後多定行學法所民得經十三之進著等部度家電力裡如水化高自二理起小物現實加量都兩"
    "體制機當使點從業本去把性好應開它合還因由其些然前外天政四日那社義事平形相全表間樣與關各重新線"
    "內數正心反你明看原又麼利比或但質氣第向道命此變條只沒結解問意建月公無系軍很情者最立代想已通並"
    "提直題黨程展五果料象員革位入常文總次品式活設及管特件長求老頭基資邊流路級少圖山統接知較將組見"
    "計別她手角期根論運農指幾九區強放決西被幹做必戰先回則任取據處隊南給色光門即保治北造百規熱領七"
)
DOMAIN_ZH = ["財務", "報告", "營收", "費用", "預算", "人資", "假勤", "特休", "病假", "事假", "規定"]
DOMAIN_EN = ["policy", "leave", "expense", "report", "budget", "revenue", "travel", "claim"]
# Query classes, timed apiece (common characters such as 人 and 的 included on purpose).
CLASSES = {
    "1 char": ["人", "的", "電", "假", "稅", "財", "中", "休", "宿", "碼"],
    "2 chars": ["財務", "特休", "病假", "預算", "報告", "營收", "規定", "電費", "密碼", "人資"],
    "3 chars": ["第三季", "特休假", "加班費", "報銷單", "現金流", "住宿費", "人資部", "財務長"],
    "English": ["leave", "budget", "expense", "travel", "revenue", "policy", "claim", "report"],
    "phrases": [
        "病假 規定",
        "人資假勤規定",
        "第三季財務報告營收",
        "报销 费用",
        "leave policy",
        "expense claim approval",
        "Q3 revenue 營收",
        "預算 budget",
    ],
}


def vocabulary(rng: random.Random) -> tuple[list[str], list[float], list[str], list[float]]:
    """Chinese and English vocabularies with Zipf weights; domain words at ranks 30-300."""
    zh = list(
        dict.fromkeys(
            a + b for a, b in zip(rng.choices(HAN, k=6000), rng.choices(HAN, k=6000), strict=False)
        )
    )
    syllables = ["ka", "to", "ri", "men", "sal", "ver", "on", "tri", "pol", "den", "ex", "bu"]
    en = list(
        dict.fromkeys("".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(4000))
    )
    for words, domain in ((zh, DOMAIN_ZH), (en, DOMAIN_EN)):
        for rank, word in zip(range(30, 300, 25), domain, strict=False):
            words.insert(rank, word)
    return zh, _zipf(len(zh)), en, _zipf(len(en))


def _zipf(n: int) -> list[float]:
    total, weights = 0.0, []
    for rank in range(1, n + 1):
        total += 1.0 / rank
        weights.append(total)
    return weights


def sentence(rng: random.Random, vocab: tuple) -> str:
    """A Chinese or English sentence drawn from the Zipf vocabularies."""
    zh, zh_weights, en, en_weights = vocab
    if rng.random() < 0.6:
        return "".join(rng.choices(zh, cum_weights=zh_weights, k=rng.randint(6, 14))) + "。"
    words = rng.choices(en, cum_weights=en_weights, k=rng.randint(8, 16))
    return " ".join(words).capitalize() + ". "


def document_text(rng: random.Random, vocab: tuple, chunks: int) -> str:
    """Markdown with `chunks` sections of about 500 characters (one chunk each)."""
    sections = []
    for i in range(chunks):
        body = ""
        while len(body) < 450:
            body += sentence(rng, vocab)
        sections.append(f"## 第{i}節 Section {i}\n\n{body}")
    return "# " + sentence(rng, vocab)[:20] + "\n\n" + "\n\n".join(sections)


def setup(database: str, pg_url: str) -> None:
    """Point Django at the bench database (created if missing) and migrate it."""
    os.environ.update(DJANGO_SETTINGS_MODULE="config.settings", DJANGO_LOG_LEVEL="WARNING")
    # Production settings (DEBUG off: no query log growing through the run).
    os.environ.update(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="bench-only", DJANGO_ALLOWED_HOSTS="x")
    for name in ("REDIS_URL", "CELERY_BROKER_URL", "EMBEDDINGS_MODEL"):
        os.environ.pop(name, None)
    if database == "postgres":
        database_ensure(pg_url)
        os.environ["DATABASE_URL"] = pg_url
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/kb-bench.sqlite3"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def passage_fields(title: str, heading: str, body: str) -> tuple[str, str, int]:
    """A passage's index words, title words and length as the code under test makes them."""
    try:
        from agents.knowledge.text import passage_index_text
    except ImportError:  # before the title was indexed apart (a "before" run on older code)
        from agents.knowledge.text import index_terms

        terms = index_terms(" ".join([title, heading, body]))
        return " ".join(terms), "", len(terms)
    return tuple(passage_index_text(title, [heading], body))


def generated_documents(args: tuple[int, int, int]) -> list[tuple[str, list[tuple]]]:
    """Documents `first`..`first + count` of the generated corpus (deterministic per number):
    (title, [(heading, text, search_text, search_title, token_count)]), in a pool process."""
    first, count, per_document = args
    vocab = vocabulary(random.Random(7))
    documents = []
    for number in range(first, first + count):
        rng = random.Random(number)
        title = sentence(rng, vocab)[:20].strip(" .。")
        rows = []
        for position in range(per_document):
            heading = f"第{position}節 Section {position}"
            body = ""
            while len(body) < 450:
                body += sentence(rng, vocab)
            rows.append((heading, body, *passage_fields(title, heading, body)))
        documents.append((title, rows))
    return documents


def load(size: int, kb) -> dict:  # noqa: ANN001
    """Bulk-load `size` generated passages into `kb`; the seconds it took and, on Postgres, the
    GIN build's seconds (the index is dropped for the load and built once after)."""
    from django.db import connection

    from agents.knowledge.models import Document

    per_document = 50
    documents = size // per_document
    timings = {}
    started = time.perf_counter()
    index_sql = None
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'knowledge_chunk_search_gin'"
            )
            index_sql = cursor.fetchone()[0]
            cursor.execute("DROP INDEX knowledge_chunk_search_gin")
    batches = [
        (first, min(500, documents - first), per_document) for first in range(0, documents, 500)
    ]
    with multiprocessing.get_context("fork").Pool(os.cpu_count()) as pool:
        for made in pool.imap(generated_documents, batches):
            rows = [
                Document(
                    kb=kb,
                    title=title,
                    filename="g.md",
                    file_type="md",
                    original=b"",
                    content_hash=f"g{kb.pk}-{title}-{i}-{time.perf_counter_ns()}",
                    status="indexed",
                    chunk_count=len(chunks),
                    token_count=sum(c[4] for c in chunks),
                )
                for i, (title, chunks) in enumerate(made)
            ]
            Document.objects.bulk_create(rows, batch_size=500)
            _insert_chunks(connection, kb.pk, [(d.pk, made[i][1]) for i, d in enumerate(rows)])
    timings["load_s"] = round(time.perf_counter() - started, 1)
    if index_sql:
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '512MB'")
            started = time.perf_counter()
            cursor.execute(index_sql)
            timings["gin_build_s"] = round(time.perf_counter() - started, 1)
    return timings


def _insert_chunks(connection, kb_id: int, documents: list) -> None:  # noqa: ANN001
    from agents.knowledge.models import Chunk

    titled = any(field.name == "search_title" for field in Chunk._meta.fields)
    rows = [
        (document_id, kb_id, position, json.dumps([heading]), body, len(body), words, count)
        + ((title,) if titled else ())
        for document_id, chunks in documents
        for position, (heading, body, words, title, count) in enumerate(chunks)
    ]
    columns = "document_id, kb_id, position, heading_path, text, char_count, search_text, "
    columns += "token_count, search_title, vector_model" if titled else "token_count, vector_model"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY knowledge_chunk ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row((*row, ""))
        else:
            marks = ", ".join(["%s"] * len(rows[0]))
            cursor.executemany(
                f"INSERT INTO knowledge_chunk ({columns}) VALUES ({marks}, '')", rows
            )


def index_labelled(kb) -> tuple[int, float]:  # noqa: ANN001
    """The labelled documents through the real indexing path; (chunks, chunks per second)."""
    from agents.knowledge.models import Document
    from agents.knowledge.services import content_hash_of, document_index

    started = time.perf_counter()
    for title, sections in DOCUMENTS:
        data = markdown(title, sections).encode()
        document = Document.objects.create(
            kb=kb,
            title=title,
            filename="labelled.md",
            file_type="md",
            original=data,
            content_hash=content_hash_of(data),
        )
        document_index(document_id=document.pk)
    count = kb.chunks.filter(document__filename="labelled.md").count()
    return count, count / (time.perf_counter() - started)


def sample_indexing(rng_seed: int = 3) -> float:
    """Chunks per second through the real path (parse, chunk, tokenize, swap), on 2,000."""
    from agents.knowledge.models import Document, KnowledgeBase
    from agents.knowledge.services import content_hash_of, document_index

    rng = random.Random(rng_seed)
    vocab = vocabulary(random.Random(7))
    kb = KnowledgeBase.objects.create(name=f"sample-{time.time_ns()}", display_name="Sample")
    documents = []
    for number in range(40):
        data = document_text(rng, vocab, 50).encode()
        documents.append(
            Document.objects.create(
                kb=kb,
                title=f"sample {number}",
                filename="s.md",
                file_type="md",
                original=data,
                content_hash=content_hash_of(data),
            )
        )
    started = time.perf_counter()
    for document in documents:
        document_index(document_id=document.pk)
    rate = kb.chunks.count() / (time.perf_counter() - started)
    kb.delete()
    return rate


def corpus(size: int, keep: bool) -> tuple[int, dict]:
    """The bench knowledge base at `size` generated passages plus the labelled set: reused
    with --keep when already loaded, else loaded afresh."""
    from django.db import connection

    from agents.knowledge.models import KnowledgeBase

    name = f"bench-{size}"
    existing = KnowledgeBase.objects.filter(name=name).first()
    if keep and existing is not None:
        return existing.pk, {"reused": True}
    KnowledgeBase.objects.all().delete()
    kb = KnowledgeBase.objects.create(name=name, display_name="Bench")
    figures = {"index_chunks_per_s": round(sample_indexing())}
    figures |= load(size, kb)
    figures["labelled_chunks"], _ = index_labelled(kb)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            started = time.perf_counter()
            cursor.execute("VACUUM ANALYZE knowledge_chunk")
            figures["analyze_s"] = round(time.perf_counter() - started, 1)
    return kb.pk, figures


def sizes() -> dict:
    """Table, TOAST and GIN sizes in MB (Postgres), or the database file's (SQLite)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size")
            return {"database_mb": round(cursor.fetchone()[0] / 2**20)}
        cursor.execute(
            "SELECT pg_table_size('knowledge_chunk'), "
            "pg_relation_size('knowledge_chunk_search_gin')"
        )
        table, gin = cursor.fetchone()
        return {"table_mb": round(table / 2**20), "gin_mb": round(gin / 2**20)}


def time_class(kb_id: int, queries: list[str], count: int) -> tuple[float, float]:
    """p50 and p99 in ms of `count` searches cycling through `queries` (after one warm-up
    round)."""
    from agents.knowledge.retrieval import passages_search

    for query in queries:
        passages_search(kb_ids=[kb_id], query=query)
    samples = []
    for i in range(count):
        started = time.perf_counter()
        passages_search(kb_ids=[kb_id], query=queries[i % len(queries)], top_k=5)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return samples[len(samples) // 2], samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def recall_at_5(kb_id: int) -> tuple[float, list[str]]:
    """The share of labelled questions whose answering passage is in the top 5, and the
    questions missed."""
    from agents.knowledge.retrieval import passages_search

    missed = []
    for query, title, heading in QUESTIONS:
        found = passages_search(kb_ids=[kb_id], query=query, top_k=5)
        if not any(p.title == title and heading in p.heading_path for p in found):
            missed.append(query)
    return 1 - len(missed) / len(QUESTIONS), missed


def run_one(database: str, args: argparse.Namespace) -> None:
    """Bench one database; one JSON line on stdout."""
    setup(database, args.pg)
    size = args.pg_size if database == "postgres" else args.sqlite_size
    kb_id, figures = corpus(size, args.keep)
    load_before = os.getloadavg()[0]
    row = {"db": database, "size": size, **figures, **sizes()}
    for name, queries in CLASSES.items():
        row[name] = [round(ms, 1) for ms in time_class(kb_id, queries, args.queries)]
    row["recall_at_5"], row["missed"] = recall_at_5(kb_id)
    row["load"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    print(json.dumps(row, ensure_ascii=False), flush=True)


def main() -> None:
    """Run each database in a child process and print a table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg-size", type=int, default=1_000_000)
    parser.add_argument("--sqlite-size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--pg", default=DEFAULT_PG)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--child", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    if args.child:
        run_one(args.child, args)
        return
    for database in [args.only] if args.only else ["sqlite", "postgres"]:
        command = [sys.executable, __file__, "--child", database, *sys.argv[1:]]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        for line in output.splitlines():
            if line.startswith("{"):
                report(json.loads(line))


def report(row: dict) -> None:
    """One database's figures as a small table."""
    print(f"\n{row['db']} at {row['size']:,} generated passages (+ labelled set)")
    for key in (
        "index_chunks_per_s",
        "load_s",
        "gin_build_s",
        "analyze_s",
        "table_mb",
        "gin_mb",
        "database_mb",
        "reused",
    ):
        if key in row:
            print(f"  {key:20} {row[key]}")
    print(f"  {'query class':20} {'p50 ms':>8} {'p99 ms':>8}")
    for name in CLASSES:
        p50, p99 = row[name]
        print(f"  {name:20} {p50:8.1f} {p99:8.1f}")
    missed = ", ".join(row["missed"]) or "-"
    print(f"  recall@5             {row['recall_at_5']:.2f}  missed: {missed}")
    start, end = row["load"]
    print(f"  load average         {start} as the searches began, {end} as they ended")


if __name__ == "__main__":
    main()
