"""Lists and scripts of platform-made text: 、 in Chinese, each script kept."""

from django.utils import translation

from config.text import in_script, joined


def test_chinese_lists_join_with_the_enumeration_comma():
    assert joined(["財務", "人資", "行事曆"], "zh-hant") == "財務、人資、行事曆"
    assert joined(["财务", "人资"], "zh-hans") == "财务、人资"


def test_english_lists_read_as_a_sentence():
    assert joined(["finance"], "en") == "finance"
    assert joined(["finance", "HR"], "en") == "finance and HR"
    assert joined(["finance", "HR", "tasks"], "en") == "finance, HR and tasks"


def test_the_active_language_is_the_default():
    with translation.override("zh-hant"):
        assert joined(["甲", "乙"]) == "甲、乙"


def test_platform_text_follows_the_turns_script():
    assert in_script("搜索了财务知识库", "zh-hant") == "搜索了財務知識庫"
    assert in_script("搜尋了財務知識庫", "zh-hans") == "搜寻了财务知识库"
    assert in_script("Searched finance", "en") == "Searched finance"
