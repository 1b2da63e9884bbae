"""What the bot says in Slack beyond the answer itself, in English, Japanese and Russian, kept together.

The answer's own words (no support, nearest fragments, the error reply, source lines) live in
``bot.answer.wording``; these are the Slack-only additions: the hint on how to flag, the notes Block Kit's
limits force on us, the reply to a mention without a question, and the hand-off's words. Format fields are named.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SlackWording:
    help: str  # a mention with no question in it
    flag_hint: str  # format with {flag}: the first flag reaction's name
    quote_shortened: str  # a quote cut to fit a Slack block
    quotes_not_shown: str  # format with {count}: citations left out to stay under 50 blocks
    reference: str  # format with {exchange_id}: under an error reply, for whoever looks it up
    text_shortened: str  # the end of a cut plain-text fallback
    missed: str  # a question left unanswered by a crash for longer than MISSED_AFTER_S
    status: str  # the assistant pane's status line while a question is answered
    prompts_title: str  # above the suggested prompts of a new assistant thread
    prompts: tuple[str, ...]  # the generic suggested prompts (ASSISTANT_PROMPTS replaces them)
    helpful: str  # the 👍 feedback button's label (read by screen readers)
    unhelpful: str  # the 👎 one
    ask_person: str  # the hand-off button under an answer
    handoff: str  # the hand-off post in the thread, one line: format with {who}, {asker}, {question}, {outcome}
    handoff_answered: str  # {outcome} when the bot answered
    handoff_no_support: str  # {outcome} when it found no support
    handoff_done: str  # to the clicker (ephemeral): format with {who}
    handoff_before: str  # to a later clicker: someone already asked for a person here
    handoff_failed: str  # to the clicker when nobody could be told (Slack or the log refused)
    handoff_nobody: str  # to the clicker where the channel names no hand-off group
    ask_person_with_question: str  # in a DM: the hand-off button that shares the question's text
    confirm_title: str  # the DM buttons' confirm dialog (Slack's confirm object)
    confirm_without: str  # … of the button that sends a link only
    confirm_with: str  # … of the button that sends the question's text too
    confirm_yes: str
    confirm_no: str
    escalation: str  # posted in ESCALATION_CHANNEL: format with {asker}, {outcome}, {link}
    escalation_question: str  # appended when the asker agreed: format with {question}
    escalation_done: str  # to the asker: format with {where}
    handoff_offer: str  # to whoever clicked 👎, above the "Ask a person" button (ephemeral)
    private_note: str  # above the buttons of an answer only the asker sees (a private-first channel)
    share: str  # the "Share in thread" button
    share_done: str  # to the asker once their answer is posted in the thread
    share_before: str  # to a later click: it is in the thread already
    share_failed: str  # to the asker when Slack or the log refused the share


SLACK_WORDING = {
    "en": SlackWording(
        help="Mention me with a question about our documents, and I will answer with quotes from them, word for word.",
        flag_hint="Wrong quote? React with its number (:one:, :two: …) to flag it, or :{flag}: to flag the whole answer.",
        quote_shortened="quote shortened to fit in Slack; the full passage is in the document",
        quotes_not_shown="Quotes not shown here (Slack's message size limit): {count}.",
        reference="Reference: {exchange_id}",
        text_shortened="… (shortened)",
        missed="Sorry — I was restarting when you asked this and could not answer it in time. Please ask again.",
        status="searching the documents…",
        prompts_title="Ask about our documents, privately:",
        prompts=("How do I reset my password?", "What is our refund policy?", "Who do I contact for an escalation?"),
        helpful="This answer helped",
        unhelpful="This answer did not help",
        ask_person="Ask a person",
        handoff="{who} {asker} would like a person to help with: “{question}” (the bot {outcome}).",
        handoff_answered="answered with quotes",
        handoff_no_support="found no support in the documents",
        handoff_done="Done: I asked {who} to help you in this thread.",
        handoff_before="A person was already asked to help in this thread.",
        handoff_failed="Sorry, I could not reach anyone just now. Please ask in the channel.",
        handoff_nobody="No one is set up to take questions handed off from this channel. Please ask in the channel.",
        ask_person_with_question="Ask a person, with my question",
        confirm_title="Ask a person?",
        confirm_without="A person in the support channel gets a link to this conversation, not what you wrote.",
        confirm_with="A person in the support channel will read your question as you wrote it.",
        confirm_yes="Ask",
        confirm_no="Cancel",
        escalation="{asker} asked for a person after a private question (the bot {outcome}): {link}",
        escalation_question=" — “{question}”",
        escalation_done="Done: a person in {where} will follow up with you.",
        handoff_offer="Sorry this did not help. A person can take a look:",
        private_note="Only you can see this answer. Share it in the thread if it helps others.",
        share="Share in thread",
        share_done="Shared: the answer is now in the thread for everyone.",
        share_before="This answer is already in the thread.",
        share_failed="Sorry, I could not share the answer just now. Please try again in a moment.",
    ),
    "ja": SlackWording(
        help="ドキュメントについての質問をメンション付きで送ってください。ドキュメントの原文をそのまま引用して回答します。",
        flag_hint="引用に誤りがあれば、その番号（:one:、:two: …）でリアクションしてください。回答全体に問題がある場合は :{flag}: を付けてください。",
        quote_shortened="Slackの表示制限のため引用を短縮しました。全文はドキュメントをご覧ください",
        quotes_not_shown="Slackのメッセージ上限のため表示していない引用: {count}件。",
        reference="参照ID: {exchange_id}",
        text_shortened="…（短縮）",
        missed="申し訳ありません。ご質問をいただいた時に再起動中だったため、時間内に回答できませんでした。もう一度質問してください。",
        status="ドキュメントを検索しています…",
        prompts_title="ドキュメントについて、個別に質問できます:",
        prompts=("パスワードをリセットするには？", "返金ポリシーを教えてください", "エスカレーションの連絡先は？"),
        helpful="役に立った",
        unhelpful="役に立たなかった",
        ask_person="担当者に聞く",
        handoff="{who} {asker} さんが担当者のサポートを希望しています: 「{question}」（ボット: {outcome}）",
        handoff_answered="引用付きで回答済み",
        handoff_no_support="ドキュメントに根拠なし",
        handoff_done="{who} にこのスレッドでのサポートを依頼しました。",
        handoff_before="このスレッドでは、すでに担当者に依頼済みです。",
        handoff_failed="申し訳ありません。現在担当者に連絡できません。チャンネルで直接質問してください。",
        handoff_nobody="このチャンネルには引き継ぎ先が設定されていません。チャンネルで直接質問してください。",
        ask_person_with_question="質問内容を添えて担当者に聞く",
        confirm_title="担当者に聞きますか？",
        confirm_without="サポートチャンネルの担当者には、この会話へのリンクだけが送られ、質問の内容は送られません。",
        confirm_with="サポートチャンネルの担当者が、あなたの質問をそのまま読みます。",
        confirm_yes="聞く",
        confirm_no="キャンセル",
        escalation="{asker} さんが個別の質問について担当者を希望しています（ボット: {outcome}）: {link}",
        escalation_question=" 「{question}」",
        escalation_done="{where} の担当者から連絡があります。",
        handoff_offer="お役に立てず申し訳ありません。担当者に確認してもらえます:",
        private_note="この回答はあなたにだけ表示されています。他の人の役に立ちそうなら、スレッドに共有してください。",
        share="スレッドに共有",
        share_done="共有しました。回答がスレッドの全員に表示されます。",
        share_before="この回答はすでにスレッドに共有されています。",
        share_failed="申し訳ありません。現在回答を共有できません。しばらくしてからもう一度お試しください。",
    ),
    "ru": SlackWording(
        help="Упомяните меня и задайте вопрос по нашим документам — я отвечу дословными цитатами из них.",
        flag_hint="Цитата неверна? Поставьте реакцию с её номером (:one:, :two: …), а чтобы отметить весь ответ — :{flag}:.",
        quote_shortened="цитата сокращена из-за ограничений Slack; полный текст — в документе",
        quotes_not_shown="Не показано цитат (ограничение размера сообщения Slack): {count}.",
        reference="Идентификатор: {exchange_id}",
        text_shortened="… (сокращено)",
        missed="Извините: когда вы задали этот вопрос, я перезапускался и не успел ответить вовремя. Задайте его, пожалуйста, ещё раз.",
        status="ищу в документах…",
        prompts_title="Спросите о наших документах — лично:",
        prompts=("Как сбросить пароль?", "Какие у нас правила возврата?", "К кому обращаться при эскалации?"),
        helpful="Ответ помог",
        unhelpful="Ответ не помог",
        ask_person="Спросить человека",
        handoff="{who} {asker} просит помощи человека: «{question}» (бот: {outcome}).",
        handoff_answered="ответил цитатами",
        handoff_no_support="не нашёл подтверждения в документах",
        handoff_done="Готово: я попросил {who} помочь вам в этой ветке.",
        handoff_before="В этой ветке уже попросили помощи человека.",
        handoff_failed="Извините, сейчас не удалось никого позвать. Спросите, пожалуйста, в канале.",
        handoff_nobody="Для этого канала не настроено, кому передавать вопросы. Спросите, пожалуйста, в канале.",
        ask_person_with_question="Спросить человека, с моим вопросом",
        confirm_title="Позвать человека?",
        confirm_without="Сотрудник в канале поддержки получит ссылку на этот разговор, но не ваш текст.",
        confirm_with="Сотрудник в канале поддержки прочитает ваш вопрос так, как вы его написали.",
        confirm_yes="Позвать",
        confirm_no="Отмена",
        escalation="{asker} просит помощи человека после личного вопроса (бот: {outcome}): {link}",
        escalation_question=" — «{question}»",
        escalation_done="Готово: сотрудник из {where} свяжется с вами.",
        handoff_offer="Жаль, что ответ не помог. Можно позвать человека:",
        private_note="Этот ответ видите только вы. Поделитесь им в ветке, если он поможет другим.",
        share="Поделиться в ветке",
        share_done="Готово: ответ теперь виден всем в ветке.",
        share_before="Этот ответ уже есть в ветке.",
        share_failed="Извините, сейчас не удалось поделиться ответом. Попробуйте ещё раз чуть позже.",
    ),
}


def slack_wording_for(language: str) -> SlackWording:
    return SLACK_WORDING.get(language, SLACK_WORDING["en"])
