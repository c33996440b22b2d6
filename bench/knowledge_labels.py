"""A small labelled set for bench/knowledge.py: company documents in 繁體, 简体 and English, and
questions with the passage that answers each (document title, section heading).

The documents are indexed among the generated ones, whose vocabulary shares their common words
(財務, 預算, leave, budget…), so a right answer has to win against many near misses."""

from __future__ import annotations

DOCUMENTS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "第三季財務報告",
        [
            (
                "營收",
                "第三季營收為新台幣四億二千萬元，較去年同期成長百分之八，主要來自企業客戶的續約。",
            ),
            ("費用", "營業費用增加百分之五，其中人事費用占六成，行銷費用因展覽延期而減少。"),
            (
                "預算",
                "第三季預算執行率為百分之九十三。預算調整須經財務長核准；"
                "下季預算編列以本季預算執行結果為基準，各部門預算於十月底前提交。",
            ),
            ("現金流", "營業活動淨現金流入一億一千萬元，期末現金及約當現金為八億元。"),
            ("展望", "第四季預計營收持平，將持續控制費用並投資新產品開發。"),
        ],
    ),
    (
        "人資假勤規定",
        [
            (
                "特休",
                "員工到職滿半年享有三日特休，滿一年七日，之後依年資遞增。"
                "特休假應於年度內休畢，未休之特休得遞延至次年或折發工資。",
            ),
            (
                "病假",
                "病假全年以三十日為限，請病假超過三日者應檢附醫療證明，病假期間工資折半發給。",
            ),
            ("事假", "事假全年以十四日為限，不發給工資；請事假應事先申請。"),
            ("加班", "平日加班費前二小時按時薪加給三分之一，再延長部分加給三分之二。"),
            ("婚假喪假", "結婚者給婚假八日；父母死亡者給喪假八日，工資照給。"),
        ],
    ),
    (
        "差旅费报销办法",
        [
            ("适用范围", "本办法适用于公司全体员工因公出差所产生的交通、住宿及膳杂费用。"),
            (
                "报销流程",
                "出差返回后十个工作日内，于系统填写报销单并上传发票，经直属主管及财务审核后付款。"
                "逾期提交的报销单不予受理。",
            ),
            ("住宿标准", "一线城市住宿每晚上限人民币六百元，其他城市四百元，超出部分自付。"),
            ("交通", "高铁二等座及经济舱机票可全额报销，出租车需注明起讫地点。"),
        ],
    ),
    (
        "Travel and Expense Policy",
        [
            ("Scope", "This policy covers business travel, meals and lodging for all employees."),
            (
                "Expense claims",
                "Submit expense claims within 30 days of the trip with itemized receipts. "
                "Claims above 500 USD need approval from your department head before payment.",
            ),
            ("Per diem", "Meals are reimbursed at a per diem of 60 USD a day in most cities."),
            ("Flights", "Book economy class for flights under six hours; business class beyond."),
        ],
    ),
    (
        "Employee Handbook: Leave",
        [
            (
                "Annual leave",
                "Full-time employees accrue 15 days of annual leave per year. Unused annual leave "
                "carries over up to 5 days into the next year.",
            ),
            (
                "Sick leave",
                "Sick leave is paid for up to 10 days a year. A doctor's note is required for "
                "sick leave longer than three consecutive days.",
            ),
            ("Parental leave", "Parents receive 16 weeks of paid parental leave after a birth."),
            (
                "Remote work",
                "Staff may work remotely two days a week with their manager's consent.",
            ),
        ],
    ),
    (
        "辦公室用電與設備",
        [
            (
                "電費",
                "辦公室電費每月約十二萬元。下班請關閉電燈、電腦與冷氣；電費異常時由總務通報電力公司。",
            ),
            ("網路", "訪客網路與內部網路分開，內部網路需以員工帳號登入。"),
            ("設備借用", "投影機、筆電等設備向總務處登記借用，七日內歸還。"),
        ],
    ),
    (
        "2025 Budget Planning",
        [
            ("Timeline", "Departments submit draft budgets by October 31; finance consolidates."),
            (
                "Headcount",
                "Headcount budget covers salaries, bonuses and benefits; new roles need a "
                "business case approved by the CFO.",
            ),
            ("Capital budget", "Capital expenditure above 50,000 USD is reviewed quarterly."),
        ],
    ),
    (
        "資訊安全守則",
        [
            ("密碼", "密碼至少十二碼，包含大小寫字母與數字，每九十天更換一次。"),
            ("釣魚郵件", "收到可疑郵件請勿點擊連結，轉寄資安小組 security@example.com 處理。"),
            ("資料分級", "機密資料不得存放於個人雲端空間，外寄須加密。"),
        ],
    ),
]

# (query, document title, section heading): the passage that answers it.
QUESTIONS: list[tuple[str, str, str]] = [
    # one character
    ("電", "辦公室用電與設備", "電費"),
    ("休", "人資假勤規定", "特休"),
    ("碼", "資訊安全守則", "密碼"),
    ("宿", "差旅费报销办法", "住宿标准"),
    # two characters
    ("預算", "第三季財務報告", "預算"),
    ("特休", "人資假勤規定", "特休"),
    ("病假", "人資假勤規定", "病假"),
    ("电费", "辦公室用電與設備", "電費"),
    ("密碼", "資訊安全守則", "密碼"),
    ("報銷", "差旅费报销办法", "报销流程"),
    # three characters
    ("加班費", "人資假勤規定", "加班"),
    ("報銷單", "差旅费报销办法", "报销流程"),
    ("現金流", "第三季財務報告", "現金流"),
    ("特休假", "人資假勤規定", "特休"),
    ("住宿费", "差旅费报销办法", "住宿标准"),
    ("釣魚郵件", "資訊安全守則", "釣魚郵件"),
    # phrases and questions
    ("第三季预算", "第三季財務報告", "預算"),
    ("病假要附醫療證明嗎", "人資假勤規定", "病假"),
    ("出差回来多久内要报销", "差旅费报销办法", "报销流程"),
    ("一線城市住宿上限", "差旅费报销办法", "住宿标准"),
    ("第三季營收成長多少", "第三季財務報告", "營收"),
    ("結婚可以請幾天假", "人資假勤規定", "婚假喪假"),
    # English
    ("sick leave", "Employee Handbook: Leave", "Sick leave"),
    ("annual leave carry over", "Employee Handbook: Leave", "Annual leave"),
    ("expense claim approval", "Travel and Expense Policy", "Expense claims"),
    ("per diem", "Travel and Expense Policy", "Per diem"),
    ("submit draft budgets", "2025 Budget Planning", "Timeline"),
    ("parental leave", "Employee Handbook: Leave", "Parental leave"),
    ("business class flights", "Travel and Expense Policy", "Flights"),
    ("capital expenditure review", "2025 Budget Planning", "Capital budget"),
    ("phishing email", "資訊安全守則", "釣魚郵件"),
    ("headcount budget", "2025 Budget Planning", "Headcount"),
]


def markdown(title: str, sections: list[tuple[str, str]]) -> str:
    """A labelled document as the Markdown file it is indexed from."""
    return f"# {title}\n\n" + "\n\n".join(f"## {head}\n\n{body}" for head, body in sections)
