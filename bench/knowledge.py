"""Benchmark: knowledge indexing throughput and search latency at 1k, 10k and 100k chunks.

Generated mixed Chinese/English documents go through the real indexing path (parse, chunk,
tokenize, one-transaction swap into the FTS5 table or the Postgres tsvector). Then searches
(two-character Chinese words, Chinese phrases, English words, mixed) are timed: lexical only,
and fused with dense vectors (the query embedded by the fake OpenAI-compatible server, stored
float16 vectors ranked in process, reciprocal rank fusion). Chunk vectors for the fused runs are
written directly (random unit vectors of --dim), so the figure is the search cost, not the fake
server's embedding speed. Each database runs in its own process and its own database.

Usage: .venv/bin/python bench/knowledge.py [--sizes 1000,10000,100000] [--queries 200]
       [--pg postgres://postgres@127.0.0.1:5432/agent_platform_kb_bench] [--only sqlite|postgres]
       [--budget 900]   (seconds of indexing per database; larger sizes are skipped past it)
"""

from __future__ import annotations

import argparse
import json
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
QUERIES = [
    "財務",
    "特休",
    "假勤",
    "病假 規定",
    "人資假勤規定",
    "第三季財務報告營收",
    "报销 费用",  # Simplified
    "leave policy",
    "expense claim approval",
    "travel",
    "Q3 revenue 營收",
    "預算 budget",
]


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
        import environ
        import psycopg

        config = environ.Env.db_url_config(pg_url)
        with psycopg.connect(
            host=config["HOST"],
            port=config["PORT"] or 5432,
            user=config["USER"],
            dbname="postgres",
            autocommit=True,
        ) as admin:
            if not admin.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [config["NAME"]]
            ).fetchone():
                admin.execute(f'CREATE DATABASE "{config["NAME"]}"')
        os.environ["DATABASE_URL"] = pg_url
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/kb-bench.sqlite3"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def index(size: int, rng: random.Random, vocab: tuple) -> tuple[int, float, int]:
    """A fresh knowledge base indexed to `size` chunks; (kb id, seconds, chunks)."""
    from django.db import connection

    from agents.knowledge.models import Document, KnowledgeBase
    from agents.knowledge.services import content_hash_of, document_index

    KnowledgeBase.objects.all().delete()
    kb = KnowledgeBase.objects.create(name="bench", display_name="Bench")
    per_document = 50
    documents = []
    for number in range(size // per_document):
        data = document_text(rng, vocab, per_document).encode()
        documents.append(
            Document(
                kb=kb,
                title=f"doc {number}",
                filename=f"doc{number}.md",
                file_type="md",
                original=data,
                content_hash=content_hash_of(data),
            )
        )
    Document.objects.bulk_create(documents, batch_size=200)
    started = time.perf_counter()
    for document in Document.objects.filter(kb=kb).only("pk"):
        document_index(document_id=document.pk)
    seconds = time.perf_counter() - started
    if connection.vendor == "postgresql":  # the steady state autovacuum reaches after a load
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE knowledge_chunk")
    return kb.pk, seconds, kb.chunks.count()


def add_vectors(kb_id: int, dim: int, rng: random.Random) -> None:
    """Random unit float16 vectors on every chunk (model 'bench-embed')."""
    from django.db import transaction

    from agents.knowledge.models import Chunk
    from agents.knowledge.retrieval.dense import pack

    with transaction.atomic():
        for chunk in Chunk.objects.filter(kb_id=kb_id).only("pk").iterator():
            vector = [rng.gauss(0, 1) for _ in range(dim)]
            norm = sum(x * x for x in vector) ** 0.5
            Chunk.objects.filter(pk=chunk.pk).update(
                vector=pack([x / norm for x in vector]), vector_dim=dim, vector_model="bench-embed"
            )


def time_searches(kb_id: int, count: int) -> tuple[float, float, int]:
    """p50 and p99 of `count` searches in ms (after a warm-up), and the empty results."""
    from agents.knowledge.retrieval import passages_search

    for query in QUERIES:
        passages_search(kb_ids=[kb_id], query=query)
    samples, empty = [], 0
    for i in range(count):
        started = time.perf_counter()
        found = passages_search(kb_ids=[kb_id], query=QUERIES[i % len(QUERIES)], top_k=5)
        samples.append((time.perf_counter() - started) * 1000)
        empty += not found
    samples.sort()
    return (
        samples[len(samples) // 2],
        samples[min(len(samples) - 1, int(len(samples) * 0.99))],
        empty,
    )


def run_one(database: str, args: argparse.Namespace) -> None:
    """Bench one database; one JSON line per size on stdout."""
    setup(database, args.pg)
    from django.conf import settings

    from tests.fake_openai import FakeOpenAI

    rng = random.Random(7)
    vocab = vocabulary(rng)
    spent = 0.0
    for size in [int(s) for s in args.sizes.split(",")]:
        if spent > args.budget:
            print(
                json.dumps({"db": database, "size": size, "skipped": "indexing budget"}), flush=True
            )
            continue
        kb_id, seconds, chunks = index(size, rng, vocab)
        spent += seconds
        lexical = time_searches(kb_id, args.queries)
        add_vectors(kb_id, args.dim, rng)
        server = FakeOpenAI().start()
        settings.EMBEDDINGS_MODEL, settings.EMBEDDINGS_BASE_URL = "bench-embed", server.base_url
        try:
            fused = time_searches(kb_id, max(20, args.queries // 4))
        finally:
            settings.EMBEDDINGS_MODEL = ""
            server.stop()
        row = {
            "db": database,
            "size": size,
            "chunks": chunks,
            "chunks_per_s": round(chunks / seconds),
            "lexical": [round(lexical[0], 1), round(lexical[1], 1)],
            "fused": [round(fused[0], 1), round(fused[1], 1)],
            "empty": lexical[2],
        }
        print(json.dumps(row), flush=True)


def main() -> None:
    """Run each database in a child process and print a table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--pg", default=DEFAULT_PG)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--budget", type=float, default=900.0)
    parser.add_argument("--child", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    if args.child:
        run_one(args.child, args)
        return
    rows = []
    for database in [args.only] if args.only else ["sqlite", "postgres"]:
        command = [sys.executable, __file__, "--child", database, *sys.argv[1:]]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        rows += [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    header = ("db", "chunks", "index chunks/s", "lexical p50/p99 ms", "fused p50/p99 ms")
    print(f"{header[0]:9}{header[1]:>8}{header[2]:>16}{header[3]:>22}{header[4]:>20}")
    for row in rows:
        if "skipped" in row:
            print(f"{row['db']:9}{row['size']:>8}  skipped ({row['skipped']})")
            continue
        lexical, fused = "/".join(map(str, row["lexical"])), "/".join(map(str, row["fused"]))
        print(f"{row['db']:9}{row['chunks']:>8}{row['chunks_per_s']:>16}{lexical:>22}{fused:>20}")
    print(
        f"fused: query embedded over HTTP by tests/fake_openai.py, {args.dim}-dim float16 vectors"
    )


if __name__ == "__main__":
    main()
