"""manage.py seed_demo: the demo agents, and with --users a demo admin and user."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from agents.demo import seed_demo_agents
from agents.knowledge.demo import knowledge_seed_demo
from agents.mcp.demo import mcp_seed_demo
from agents.models import Agent
from chat.channels.demo.store import demo_line_seed
from delegation.evals.demo import evals_seed_demo
from delegation.routing.models import Learning, RoutingPolicy
from delegation.routing.seeds import routing_seed, routing_seed_demo_stats
from reminders.demo import schedules_seed_demo
from reminders.watches.demo import watches_seed_demo

DEMO_USERS = [("admin", "admin", True), ("demo", "demo", False)]


class Command(BaseCommand):
    """Idempotent: running it twice changes nothing."""

    help = "Create the demo agents (and with --users, demo accounts) if they do not exist."

    def add_arguments(self, parser: Any) -> None:
        """--users also creates admin/admin and demo/demo (development only)."""
        parser.add_argument("--users", action="store_true", help="create admin/admin and demo/demo")

    def handle(self, *args: Any, **options: Any) -> None:
        """Seed, and say what was created."""
        if options["users"] and not settings.DEBUG:  # refuse before writing anything
            raise CommandError("--users creates known passwords; it runs only with DEBUG on.")
        created = seed_demo_agents()
        self.stdout.write(f"Demo agents created: {', '.join(created) or 'none (already there)'}")
        server = mcp_seed_demo()
        if server is not None:
            tools = server.tools.count()
            self.stdout.write(f"Demo MCP server: {server.name} ({tools} tools, over stdio)")
        if options["users"]:
            for username, password, staff in DEMO_USERS:
                user_model = get_user_model()
                if not user_model.objects.filter(username=username).exists():
                    user_model.objects.create_user(
                        username, password=password, is_staff=staff, is_superuser=staff
                    )
                    self.stdout.write(f"User created: {username} / {password}")
        if options["users"] and settings.DEMO_LINE:
            account = demo_line_seed(username="demo")
            self.stdout.write(f"Demo LINE account of demo: {account} (/demo/line/)")
        if options["users"] and (scheduled := schedules_seed_demo(username="demo")):
            self.stdout.write(f"Demo schedule of demo: {scheduled.prompt} (/tasks/)")
        kbs = knowledge_seed_demo()
        self.stdout.write(f"Demo knowledge bases: {', '.join(kb.name for kb in kbs)}")
        if not RoutingPolicy.objects.filter(name="departments").exists():
            entry = Agent.objects.filter(name="assistant", is_entry=True)
            routing_seed(name="departments", entry_agents=list(entry))
            routing_seed(name="site-assistant")
            self.stdout.write(
                "Routing policies created: departments (the assistant's), site-assistant"
            )
            # The demo shows routing's figures (routing debug, the test box) without acting on
            # them: learning advisory.
            RoutingPolicy.objects.filter(name="departments").update(learning=Learning.ADVISORY)
        written = routing_seed_demo_stats(entry="assistant", today=timezone.now().date())
        if written:
            self.stdout.write(f"Routing statistics for the demo: {written} rows (14 days)")
        watch = watches_seed_demo()
        if watch is not None:
            self.stdout.write(f"Demo watch: {watch.name} ({watch.users.count()} users)")
        suites = evals_seed_demo()
        if suites:
            self.stdout.write(
                f"Eval suites created: {', '.join(suites)} (manage.py run_evals NAME)"
            )
