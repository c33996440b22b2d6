"""Demo knowledge: a finance and an HR knowledge base with short, dated, real-looking documents."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from agents.knowledge.models import KnowledgeBase
from agents.knowledge.selectors import document_with_hash
from agents.knowledge.services import content_hash_of, document_upload
from agents.models import Agent

Q3_REPORT = """# 2026年第三季財務報告

## 摘要
第三季（7月至9月）合併營收為新台幣1億2,400萬元，較第二季成長8.2%；毛利率41.5%。

## 費用
營業費用合計3,150萬元，其中差旅費420萬元、行銷費用980萬元。差旅費較上季下降12%。

## 現金與預算
期末現金餘額2億1,000萬元。第四季預算已核定，資本支出上限為1,500萬元。

## 下一步
財務部將於11月15日前完成年度預算初稿，各部門請於10月31日前提交需求。
"""

Q2_REPORT = """# 2026年第二季財務報告

## 摘要
第二季（4月至6月）合併營收為新台幣1億1,460萬元，毛利率39.8%。

## 費用
營業費用合計3,020萬元，其中差旅費477萬元。

## 現金
期末現金餘額1億9,600萬元。
"""

EXPENSE_POLICY = """# Expense reimbursement policy

## Scope
Applies to all employees travelling or spending on behalf of the company.

## Claims
Submit claims within 30 days of the expense, with itemised receipts. Claims above NT$10,000
need your department head's approval before payment.

## Travel
Economy class for flights under 6 hours. Hotels up to NT$4,000 per night in Taiwan. Taxis are
reimbursed only after 22:00 or when carrying equipment.

## Payment
Approved claims are paid with the next monthly payroll.
"""

HR_LEAVE_RULES = """# 人資假勤規定

## 特休
到職滿六個月未滿一年者，給予特休三日；滿一年未滿二年者七日；滿二年未滿三年者十日；滿三年
未滿五年者每年十四日。特休應於年度內休畢，未休天數依規定折發工資。

## 病假
未住院者，一年內合計不得超過三十日；連續請病假超過三日者，須檢附醫療證明。病假三十日內
工資折半發給。

## 事假
事假一年內合計不得超過十四日，事假期間不給薪。請假應於前一工作日經主管核准。

## 請假流程
請假請於人資系統提出申請，並由直屬主管核准；緊急情況可於當日上班前以電話通知主管，事後補辦。
"""

LEAVE_POLICY = """# Leave policy (summary)

## Annual leave
3 days after 6 months of service, 7 days after 1 year, 10 days after 2 years, 14 days after
3 years. Unused days are paid out at the end of the year.

## Sick leave
Up to 30 days a year (half pay). More than 3 consecutive days need a doctor's certificate.

## Personal leave
Up to 14 days a year, unpaid. Ask your manager one working day ahead.
"""

DEMO: dict[str, dict[str, Any]] = {
    "finance": {
        "display_name": "Finance documents",
        "display_names": {"en": "Finance documents", "zh-hant": "財務文件", "zh-hans": "财务文件"},
        "description": "Quarterly financial reports and the expense policy.",
        "descriptions": {
            "en": "Quarterly financial reports and the expense policy.",
            "zh-hant": "每季財務報告與費用報銷規定。",
            "zh-hans": "每季财务报告与费用报销规定。",
        },
        "group": "finance",
        "documents": [
            ("q3-2026.md", "2026年第三季財務報告", date(2026, 10, 15), Q3_REPORT),
            ("q2-2026.md", "2026年第二季財務報告", date(2026, 7, 15), Q2_REPORT),
            ("expenses.md", "Expense reimbursement policy", date(2026, 3, 1), EXPENSE_POLICY),
        ],
    },
    "hr": {
        "display_name": "HR rules",
        "display_names": {"en": "HR rules", "zh-hant": "人資規定", "zh-hans": "人资规定"},
        "description": "Leave and attendance rules (人資假勤規定).",
        "descriptions": {
            "en": "Leave and attendance rules.",
            "zh-hant": "人資假勤規定：請假與出勤。",
            "zh-hans": "人资假勤规定：请假与出勤。",
        },
        "group": None,
        "documents": [
            ("leave-rules.md", "人資假勤規定", date(2026, 1, 1), HR_LEAVE_RULES),
            ("leave-policy.md", "Leave policy", date(2026, 1, 1), LEAVE_POLICY),
        ],
    },
}


def knowledge_seed_demo(*, demo_username: str = "demo") -> list[KnowledgeBase]:
    """Create (or complete) the demo knowledge bases, indexed now; idempotent. Finance is
    readable by the "finance" group, which the demo user joins; HR by everyone signed in."""
    demo_user = get_user_model().objects.filter(username=demo_username).first()
    created = []
    for name, spec in DEMO.items():
        with transaction.atomic():
            group = Group.objects.get_or_create(name=spec["group"])[0] if spec["group"] else None
            kb, _ = KnowledgeBase.objects.update_or_create(
                name=name,
                defaults={
                    "display_name": spec["display_name"],
                    "display_names": spec["display_names"],
                    "description": spec["description"],
                    "descriptions": spec["descriptions"],
                    "access_group": group,
                },
            )
            kb.agents.add(*Agent.objects.filter(name=name))
            if group and demo_user:
                demo_user.groups.add(group)
        for filename, title, effective, text in spec["documents"]:
            data = text.encode()
            if document_with_hash(kb=kb, content_hash=content_hash_of(data)) is None:
                document_upload(
                    kb=kb,
                    filename=filename,
                    data=data,
                    title=title,
                    source=f"demo/{name}/{filename}",
                    effective_date=effective,
                    background=False,
                )
        created.append(kb)
    return created
