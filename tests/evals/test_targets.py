"""An eval run's target and waits are kept in English and read in the admin's language."""

from __future__ import annotations

from django.utils import translation

from delegation.evals.targets import target_text
from delegation.evals.waits import wait_outcome, wait_text


def test_a_kept_target_reads_in_chinese_and_stays_english_in_english():
    kept = "current versions, the offline model"
    with translation.override("zh-hant"):
        assert target_text(kept) == "目前版本，離線模型"
        assert target_text("draft of finance (edited from v3), model gpt-4o") == (
            "finance 的草稿（由 v3 編輯），模型 gpt-4o"
        )
    with translation.override("en"):
        assert target_text(kept) == kept


def test_a_target_typed_by_someone_is_shown_as_typed():
    with translation.override("zh-hans"):
        assert target_text("nightly check") == "nightly check"


def test_a_kept_wait_reads_in_chinese():
    wait = {"wait": "waited for staff approval of create_task", "decision": "approved"}
    with translation.override("zh-hant"):
        assert (wait_text(wait), wait_outcome(wait)) == ("曾等待員工核准 create_task", "已核准")
    with translation.override("en"):
        assert wait_text(wait) == "waited for staff approval of create_task"
