"""Which messages in a help channel count as questions: real-looking messages in English, Japanese and Russian,
question marks (full-width too) and interrogative openings, and the chatter that must stay unanswered."""

from __future__ import annotations

import pytest

from bot.slack.question_like import looks_like_question

QUESTIONS = [
    "How long is an account locked after 5 failed sign-in attempts?",
    "how do I reset my password",
    "Hi team, where can I find the VPN config for the Berlin office",
    "Quick question: does the expense tool accept receipts in PDF",
    "Is there a limit on attachment size in Zendesk",
    "anyone know whether SSO works with the staging env",
    "Any idea why the build badge is red. It was green this morning",
    "Can support shorten the lockout",
    "What's the retention period for audit logs",
    "The export fails on large files - is that a known issue?",
    "Which form do I use for a hardware refund",
    "パスワードを忘れた場合はどうすればいいですか",
    "アカウントのロック時間はどれくらいですか？",
    "VPNの設定方法を教えてください",
    "経費精算の締め日はいつかな",
    "Как сбросить пароль в корпоративном портале",
    "Привет! Где лежит шаблон договора",
    "Подскажите, сколько хранятся логи аудита",
    "Есть ли ограничение на размер вложений",
    "Коллеги, можно оплатить обучение картой компании",
]

NOT_QUESTIONS = [
    "Thanks, that fixed it!",
    "Deploying the new release to staging now.",
    "Do not deploy on Friday afternoons.",
    "Can't log in since this morning, checking with IT",
    "FYI the wiki is down for maintenance until 14:00.",
    "lol",
    "Please see `GET /api/users?page=2` for the paging format.",
    "> Where is the form?\nFound it, thanks.",
    "ありがとうございます、解決しました。",
    "明日の会議は10時からです。",
    "Спасибо, всё заработало.",
    "Что-то сломалось на стенде, уже чиним.",
    "Где-то в вики это было описано, найду и пришлю.",
    "",
]


@pytest.mark.parametrize("text", QUESTIONS)
def test_a_question_is_recognised(text: str) -> None:
    assert looks_like_question(text)


@pytest.mark.parametrize("text", NOT_QUESTIONS)
def test_chatter_is_not_a_question(text: str) -> None:
    assert not looks_like_question(text)
