"""Short support articles in English, Japanese and Russian for the sync bench: a title and three sections (a
heading and a paragraph of two sentences each), as a help centre writes them.

    article(number, revision=0) -> Article      the same number and revision give the same text

The language cycles en, ja, ru by number, the topic (refunds, returns, escalation) by the next digit; the product,
team and figures are drawn from a generator seeded by the number, so no two articles share a sentence (the ingest
embeds a text repeated within a run once, and a corpus of repeats would flatter the rate). A revision changes the
first section's figures: a new version with new text, the other sections as they were.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

LANGUAGES = ("en", "ja", "ru")
PRODUCTS = ("Atlas", "Nimbus", "Orbit", "Cedar", "Lumen", "Quill", "Harbor", "Juniper", "Vega", "Tundra")
TEAMS = {"en": ("Billing", "Logistics", "Second line", "Accounts", "Platform"),
         "ja": ("請求", "物流", "二次対応", "アカウント", "基盤"),
         "ru": ("биллинга", "логистики", "второй линии", "аккаунтов", "платформы")}

# (title, ((heading, paragraph), ...)) per topic and language; {slots} filled per article.
TOPICS: dict[str, tuple[tuple[str, tuple[tuple[str, str], ...]], ...]] = {
    "en": (
        ("{product} refunds ({code})", (
            ("Annual plans", "Annual {product} plans can be refunded in full within {days} days of purchase, up to "
                             "{amount} USD. After that, the refund is prorated by the months left, less a fee of "
                             "{fee} USD."),
            ("Monthly plans", "Monthly {product} plans billed to account {account} are not refunded after the billing "
                              "date. An agent may credit up to {amount2} USD to the next invoice when an outage "
                              "lasted over {hours} hours."),
            ("How to ask for a refund", "Customers ask from the billing page or write to support with order number "
                                        "{code}. The {team} team answers requests over {amount} USD within {hours2} "
                                        "business hours."))),
        ("Returning a {product} {model} ({code})", (
            ("Return window", "A {product} {model} can be returned within {days} days of delivery if it is in its "
                              "original box. Opened accessories are taken back within {days2} days under form "
                              "{form}, and only when they are faulty."),
            ("Shipping costs", "We pay the return label for faulty devices; otherwise {amount} USD is deducted "
                               "from the refund. Parcels over {weight} kg or longer than {length} cm need a courier "
                               "pickup."),
            ("Inspection", "The {team} team inspects each return within {hours} hours of arrival at warehouse "
                           "{code}. The refund of a {model} follows within {days2} business days of form {form}."))),
        ("Escalating a {product} ticket ({code})", (
            ("When to escalate", "Escalate a {product} ticket from queue {queue} to the second line when the first "
                                 "line cannot solve it within {minutes} minutes. Priority customers, such as account "
                                 "{account}, are escalated after {minutes2} minutes."),
            ("Who is on duty", "The {team} team keeps a duty engineer for {product} on call at extension {extension}. "
                               "Outside office hours, page them only for incidents of severity {severity} in queue "
                               "{queue} or above."),
            ("What to include", "Add the account id, the steps to reproduce and the error code {code} to the "
                                "ticket. Tickets without them are sent back to queue {queue} within {hours} hours."))),
    ),
    "ja": (
        ("{product}の返金について（{code}）", (
            ("年間プラン", "{product}の年間プランは、購入から{days}日以内であれば{amount}円まで全額返金できます。それ以降は"
                          "残りの月数に応じて返金し、手数料として{fee}円を差し引きます。"),
            ("月額プラン", "アカウント{account}で請求された{product}の月額プランは、請求日を過ぎると返金できません。障害が"
                          "{hours}時間を超えた場合、担当者は次回の請求から最大{amount2}円を差し引けます。"),
            ("返金の申請方法", "お客様は請求ページから、または注文番号{code}を添えてサポートに連絡して申請します。"
                              "{amount}円を超える申請には{team}チームが{hours2}営業時間以内に回答します。"))),
        ("{product} {model}の返品（{code}）", (
            ("返品の期限", "{product} {model}は、元の箱に入っていれば到着後{days}日以内に返品できます。開封済みの付属品は"
                          "故障している場合に限り、申請書{form}で{days2}日以内に受け付けます。"),
            ("送料", "故障品の返送料は当社が負担しますが、それ以外の場合は返金額から{amount}円を差し引きます。"
                    "{weight}kgを超える荷物や{length}cmを超える荷物は集荷の手配が必要です。"),
            ("検品", "{team}チームは倉庫{code}への到着から{hours}時間以内に返品を検品します。{model}の返金は申請書{form}の"
                    "受付から{days2}営業日以内に行われます。"))),
        ("{product}の問い合わせのエスカレーション（{code}）", (
            ("エスカレーションの基準", "一次対応で{minutes}分以内に解決できないキュー{queue}の{product}の問い合わせは二次"
                                     "対応に引き継ぎます。アカウント{account}などの優先顧客の場合は{minutes2}分で引き継ぎ"
                                     "ます。"),
            ("当番", "{team}チームは{product}の当番エンジニアを内線{extension}で待機させています。営業時間外はキュー"
                    "{queue}の重大度{severity}以上の障害に限り呼び出してください。"),
            ("記載事項", "アカウントID、再現手順、エラーコード{code}を問い合わせに記載してください。記載がない場合は"
                        "{hours}時間以内にキュー{queue}へ差し戻されます。"))),
    ),
    "ru": (
        ("Возврат средств за {product} ({code})", (
            ("Годовые тарифы", "Годовой тариф {product} можно вернуть полностью в течение {days} дней после покупки, "
                               "но не более {amount} рублей. Позже сумма возвращается пропорционально оставшимся "
                               "месяцам за вычетом комиссии {fee} рублей."),
            ("Месячные тарифы", "Месячные тарифы {product} по счёту {account} после даты списания не возвращаются. "
                                "Если сбой длился дольше {hours} часов, оператор может зачесть до {amount2} рублей в "
                                "следующий счёт."),
            ("Как оформить возврат", "Клиент оформляет возврат на странице оплаты или пишет в поддержку, указав номер "
                                     "заказа {code}. На заявки больше {amount} рублей команда {team} отвечает в "
                                     "течение {hours2} рабочих часов."))),
        ("Возврат устройства {product} {model} ({code})", (
            ("Срок возврата", "Устройство {product} {model} можно вернуть в течение {days} дней после доставки, если "
                              "оно в заводской коробке. Вскрытые аксессуары принимаются по форме {form} в течение "
                              "{days2} дней и только при неисправности."),
            ("Стоимость доставки", "Доставку неисправных устройств оплачиваем мы; в остальных случаях из суммы "
                                   "возврата удерживается {amount} рублей. Посылки тяжелее {weight} кг или длиннее "
                                   "{length} см забирает курьер."),
            ("Проверка", "Команда {team} проверяет каждый возврат в течение {hours} часов после поступления на склад "
                         "{code}. Деньги за {model} возвращаются в течение {days2} рабочих дней после формы {form}."))),
        ("Передача обращения по {product} ({code})", (
            ("Когда передавать", "Если первая линия не может решить вопрос по {product} из очереди {queue} за "
                                 "{minutes} минут, обращение передаётся на вторую линию. Обращения приоритетных "
                                 "клиентов, например счёта {account}, передаются через {minutes2} минут."),
            ("Дежурный инженер", "Команда {team} держит дежурного инженера по {product} на добавочном {extension}. В "
                                 "нерабочее время его вызывают только при инцидентах уровня {severity} и выше в "
                                 "очереди {queue}."),
            ("Что указать", "Укажите в обращении номер аккаунта, шаги воспроизведения и код ошибки {code}. "
                            "Обращения без них возвращаются в очередь {queue} в течение {hours} часов."))),
    ),
}


@dataclass(frozen=True, slots=True)
class Article:
    number: int
    language: str  # en, ja, ru
    title: str
    sections: tuple[tuple[str, str], ...]  # (heading, paragraph)


def article(number: int, revision: int = 0) -> Article:
    language = LANGUAGES[number % len(LANGUAGES)]
    title, sections = TOPICS[language][number // len(LANGUAGES) % len(TOPICS[language])]
    draw = random.Random(number)
    slots = {"product": draw.choice(PRODUCTS), "team": draw.choice(TEAMS[language]), "code": f"{number:05d}",
             "model": f"{draw.choice('ACEKMRSTX')}{draw.randint(100, 999)}", "days": draw.randint(7, 90),
             "days2": draw.randint(3, 30), "amount": draw.randint(10, 9999), "amount2": draw.randint(10, 9999),
             "fee": draw.randint(5, 999), "account": draw.randint(100000, 999999), "form": draw.randint(1000, 9999),
             "queue": draw.randint(100, 999), "extension": draw.randint(1000, 9999), "hours": draw.randint(2, 72),
             "hours2": draw.randint(2, 72), "weight": draw.randint(5, 40), "length": draw.randint(50, 200),
             "minutes": draw.randint(10, 60), "minutes2": draw.randint(5, 30), "severity": draw.randint(1, 3)}
    filled = [(heading.format(**slots), paragraph.format(**slots)) for heading, paragraph in sections]
    if revision:  # the first section's figures change: new text there, the rest as it was
        revised = slots | {"days": slots["days"] + revision, "amount": slots["amount"] + 10 * revision,
                           "minutes": slots["minutes"] + revision}
        filled[0] = (sections[0][0].format(**revised), sections[0][1].format(**revised))
    return Article(number, language, title.format(**slots), tuple(filled))


def markdown(a: Article) -> str:
    return f"# {a.title}\n\n" + "".join(f"## {heading}\n\n{paragraph}\n\n" for heading, paragraph in a.sections)


def html(a: Article, *, heading_ids: bool = False) -> str:
    """The body as a help centre or wiki stores it; ``heading_ids``: ``id="h.…"`` on each heading, as a Google Doc
    exports it."""
    def heading(i: int, text: str) -> str:
        return f'<h2 id="h.{a.number}s{i}">{text}</h2>' if heading_ids else f"<h2>{text}</h2>"

    return "".join(f"{heading(i, h)}<p>{p}</p>" for i, (h, p) in enumerate(a.sections))
