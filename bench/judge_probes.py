"""The judge on support-style sentences, which none of its training sets holds: hand-written probes.

    python -m bench.judge_probes [--other FOLDER ...]

Each probe is a question, the sentence of a help article that answers it, and a sentence of the same article that
is only about it — the kind of text the bot serves, short and plain, unlike the Wikipedia paragraphs the judge was
trained and measured on. For the shipped judge (and any other judge folder given, e.g. an earlier one checked out
with ``git show``): each sentence's probability, and whether the answer outranks the near miss. Writes
docs/benchmarks.md, section "judge-probes".
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.common import machine_line, table, write_section
from retrieval.encoder.judge import Judge, Pair, read_judge
from retrieval.encoder.runtime import E5Encoder

# (language, question, the sentence that answers it, a sentence of the same article that does not)
PROBES = [
    ("en", "How much does shipping cost?", "Standard shipping costs $5 per order.",
     "Orders are shipped within two business days."),
    ("en", "How long is a password reset link valid?", "The reset link is valid for 60 minutes.",
     "You can reset your password from the sign-in page."),
    ("en", "Within how many days can an annual plan be refunded?",
     "Annual plans can be refunded within 30 days of purchase.", "Refunds are paid to the card used for the purchase."),
    ("en", "What is the price of the Pro plan?", "The Pro plan costs $20 per user per month.",
     "The Pro plan includes priority support."),
    ("en", "When is the support desk open?", "The support desk is open weekdays from 9:00 to 18:00 CET.",
     "The support desk answers questions by chat and email."),
    ("en", "How many users can a Team workspace have?", "A Team workspace can have up to 50 users.",
     "Admins can invite users to a Team workspace from the settings page."),
    ("ja", "送料はいくらですか？", "送料は全国一律550円です。", "商品は注文の翌日に発送します。"),
    ("ja", "返品は何日以内に受け付けますか？", "返品は商品到着後14日以内に受け付けます。", "返品の際は注文番号をご用意ください。"),
    ("ja", "年会費はいくらですか？", "年会費は3,300円（税込）です。", "年会費はご登録のクレジットカードに請求されます。"),
    ("ja", "サポートの受付時間は？", "サポートの受付時間は平日9時から18時までです。", "サポートへはチャットまたはメールでお問い合わせください。"),
    ("ja", "パスワード再設定のリンクの有効期限は？", "再設定用のリンクの有効期限は60分です。", "パスワードはログイン画面から再設定できます。"),
    ("ja", "チームには何人まで招待できますか？", "1つのチームに招待できるのは最大50人です。", "メンバーは設定画面からチームに招待できます。"),
    ("ru", "Когда обращение передаётся на вторую линию?",
     "Обращение передаётся на вторую линию, если оно не решено в течение 2 часов.",
     "Первая линия отвечает на звонки и письма клиентов."),
    ("ru", "Сколько стоит доставка?", "Доставка по всей России стоит 300 рублей.", "Заказы отправляются в течение двух дней."),
    ("ru", "В течение скольких дней можно вернуть товар?", "Товар можно вернуть в течение 14 дней после получения.",
     "Для возврата понадобится номер заказа."),
    ("ru", "Сколько пользователей может быть в команде?", "В команде может быть до 50 пользователей.",
     "Пригласить пользователей в команду можно в настройках."),
    ("ru", "Когда работает служба поддержки?", "Служба поддержки работает по будням с 9 до 18 часов по Москве.",
     "Служба поддержки отвечает в чате и по почте."),
    ("ru", "Сколько действует ссылка для сброса пароля?", "Ссылка для сброса пароля действует 60 минут.",
     "Сбросить пароль можно на странице входа."),
]
TITLE = "Help"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, action="append", default=[],
                        help="another judge's folder (judge.npz and judge.json), scored beside the shipped one")
    args = parser.parse_args()
    encoder = E5Encoder(threads=2)
    judges = [Judge(encoder, *read_judge())] + [Judge(encoder, *read_judge(folder)) for folder in args.other]
    pairs = [Pair(q, a, TITLE) for _, q, a, _ in PROBES] + [Pair(q, n, TITLE) for _, q, _, n in PROBES]
    scored = [judge.probabilities(pairs) for judge in judges]
    rows, summary = [], []
    for i, (language, question, _, _) in enumerate(PROBES):
        cells: list[object] = [language, question]
        for probabilities in scored:
            right, wrong = float(probabilities[i]), float(probabilities[i + len(PROBES)])
            cells += [f"{right:.2f} / {wrong:.2f}", "yes" if right > wrong else "**no**"]
        rows.append(cells)
    for judge, probabilities in zip(judges, scored, strict=True):
        for language in ("en", "ja", "ru"):
            picked = [i for i, p in enumerate(PROBES) if p[0] == language]
            right = [float(probabilities[i]) for i in picked]
            wrong = [float(probabilities[i + len(PROBES)]) for i in picked]
            summary.append([judge.version, language, f"{sum(r > w for r, w in zip(right, wrong))} of {len(picked)}",
                            sum(right) / len(right), sum(wrong) / len(wrong)])
    headers = ["language", "question"]
    for judge in judges:
        headers += [f"`{judge.version}`: answer / near miss", "answer ranks first"]
    text = "\n\n".join([
        "## The judge on support-style sentences (`python -m bench.judge_probes`)",
        f"Measured on: {machine_line()}",
        (f"{len(PROBES)} hand-written probes (`bench/judge_probes.py`): a question, the help-article sentence that "
         "answers it and one of the same article that is only about it, title \"Help\". Short, plain support text, "
         "which none of the judge's training sets holds (they are Wikipedia paragraphs and search snippets)."),
        table(headers, rows),
        table(["judge", "language", "answer ranks first", "mean p(answer)", "mean p(near miss)"], summary),
    ])
    write_section("judge-probes", text)
    print(text)
    encoder.close()


if __name__ == "__main__":
    main()
