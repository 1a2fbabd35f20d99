"""The multilingual retrieval set of ``make bench-multilingual``: chats in Chinese, Japanese, Korean and Russian
with known evidence, assembled from public data installed from PyPI.

Origin: every name, city, company, job and country comes from the locale data of Faker (PyPI ``faker``,
MIT licence; locales ``zh_CN``, ``ja_JP``, ``ko_KR``, ``ru_RU``), drawn with a fixed seed, so the set is the
same on every machine and needs no download. The sentence and question templates below were written for
this benchmark (four facts per person, said in one way and asked in another: "moved to X last month" /
"which city does she live in now?"; half of them, drawn at random, ask by the value instead: "who lives in
X now?", when no one else has that value). No public multilingual dataset with per-turn evidence installs from
PyPI here (the usual ones, MIRACL, Mr. TyDi, XQuAD, load from a model hub at run time).

Shape, per language: ``people`` people; each has four fact turns (the evidence of one question each: city,
company, job, country visited) eight turns that only mention them (lunch, a call, a book, ...) and four near misses (the same kind of
fact, not theirs: a cousin's city, a failed interview, a childhood dream job, a country not yet visited), so
a name alone matches sixteen turns and the question's own meaning must pick the right one; every user turn is
set between two sentences of small talk (rain, tea, a new bakery...), as chat messages ramble; every user
turn is answered by a short generic bot line; four closing turns keep the evidence out of the history window.
Scripts: Han (zh), kana and kanji (ja), Hangul (ko) and Cyrillic (ru): four non-Latin scripts.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bench.retrieval import Chat, Question, Turn

FAKER_SEED = 17


@dataclass(frozen=True)
class Language:
    code: str  # the chat's key
    locale: str  # Faker's
    script: str
    facts: dict[str, tuple[str, str, str]]  # fact -> (statement, question by name, question by value)
    mentions: tuple[str, ...]
    near_misses: tuple[str, ...]  # the same person, the same kind of fact, but not theirs (hard negatives)
    chatter: tuple[str, ...]  # what a message says around its fact, as chat messages ramble
    replies: tuple[str, ...]
    closing: tuple[str, ...]


LANGUAGES = (
    Language(
        "zh",
        "zh_CN",
        "Han",
        {
            "city": ("{name}上个月搬到了{city}，说那里的生活很安静。", "{name}现在住在哪个城市？", "哪位朋友现在住在{city}？"),
            "company": ("{name}现在在{company}上班，每天都很忙。", "{name}在哪家公司工作？", "哪位朋友在{company}工作？"),
            "job": ("{name}的职业是{job}，已经做了好几年了。", "{name}是做什么工作的？", "谁是做{job}的？"),
            "country": ("{name}去年夏天去{country}旅行了两个星期。", "{name}去哪个国家旅行过？", "谁去{country}旅行过？"),
        },
        (
            "今天和{name}一起吃了午饭，聊得很开心。", "{name}给我打了电话，问我周末有没有空。", "{name}推荐了一本书给我。",
            "{name}的生日快到了，我还没想好送什么礼物。", "昨晚和{name}一起看了一部电影，结局很感人。",
            "{name}最近在学做饭，说下次请我们吃饭。", "{name}养了一只小猫，每天都发照片给我看。",
            "我和{name}约好了下周一起去爬山。",
        ),
        ("{name}的表哥在{city2}开了一家小店。", "{name}说{company2}的面试没有通过。", "{name}小时候梦想成为{job2}。", "{name}一直想去{country2}看看，可惜还没去成。"),
        ("今天外面一直在下雨，我哪儿也没去。", "我刚煮了一壶茶，正在慢慢喝。", "最近工作有点累，晚上总是睡不好。", "楼下新开的面包店味道还不错。", "周末我打算把房间好好收拾一下。", "刚才在路上看到一只很可爱的狗。"),
        ("听起来不错！", "真的吗？后来呢？", "我记住了。", "哈哈，真有意思。"),
        ("今天就聊到这里吧。", "好的，晚安。", "明天见！", "晚安！"),
    ),
    Language(
        "ja",
        "ja_JP",
        "kana+kanji",
        {
            "city": ("{name}さんは先月{city}に引っ越して、静かな暮らしを楽しんでいるそうです。", "{name}さんは今どこに住んでいますか？", "{city}に住んでいるのは誰ですか？"),
            "company": ("{name}さんは今{company}で働いていて、毎日とても忙しいです。", "{name}さんはどの会社に勤めていますか？", "{company}に勤めているのは誰ですか？"),
            "job": ("{name}さんの仕事は{job}で、もう何年も続けています。", "{name}さんの職業は何ですか？", "{job}をしているのは誰ですか？"),
            "country": ("{name}さんは去年の夏に{country}へ二週間旅行しました。", "{name}さんはどの国を旅行しましたか？", "{country}を旅行したのは誰ですか？"),
        },
        (
            "今日は{name}さんと一緒にランチを食べました。", "{name}さんから電話があって、週末は暇かと聞かれました。",
            "{name}さんがおすすめの本を教えてくれました。", "もうすぐ{name}さんの誕生日なのに、プレゼントがまだ決まりません。",
            "昨夜は{name}さんと映画を見て、最後に泣いてしまいました。", "{name}さんは最近料理を習っていて、今度ごちそうしてくれるそうです。",
            "{name}さんは子猫を飼い始めて、毎日写真を送ってきます。", "来週、{name}さんと山登りに行く約束をしました。",
        ),
        ("{name}さんのいとこは{city2}で小さな店を開きました。", "{name}さんは{company2}の面接に落ちたそうです。", "{name}さんは子どもの頃、{job2}になるのが夢でした。", "{name}さんはずっと{country2}に行きたがっていますが、まだ行けていません。"),
        ("今日は一日中雨で、どこにも出かけませんでした。", "さっきお茶をいれて、ゆっくり飲んでいます。", "最近仕事が忙しくて、夜よく眠れません。", "近所に新しくできたパン屋がおいしいです。", "週末は部屋をちゃんと片付けるつもりです。", "さっき道でかわいい犬を見かけました。"),
        ("いいですね！", "本当ですか？それで？", "覚えておきます。", "面白いですね。"),
        ("今日はこのへんで。", "はい、おやすみなさい。", "また明日！", "おやすみ！"),
    ),
    Language(
        "ko",
        "ko_KR",
        "Hangul",
        {
            "city": ("{name} 씨는 지난달 {city}(으)로 이사해서 조용한 생활을 즐기고 있대요.", "{name} 씨는 지금 어느 도시에 살아요?", "{city}에 사는 사람은 누구예요?"),
            "company": ("{name} 씨는 요즘 {company}에서 일하는데 매일 너무 바빠요.", "{name} 씨는 어느 회사에 다녀요?", "{company}에 다니는 사람은 누구예요?"),
            "job": ("{name} 씨의 직업은 {job}이고 벌써 몇 년째 하고 있어요.", "{name} 씨는 무슨 일을 해요?", "{job} 일을 하는 사람은 누구예요?"),
            "country": ("{name} 씨는 작년 여름에 {country}에 2주 동안 여행을 다녀왔어요.", "{name} 씨는 어느 나라로 여행을 갔어요?", "{country}에 여행 간 사람은 누구예요?"),
        },
        (
            "오늘 {name} 씨랑 같이 점심을 먹었어요.", "{name} 씨한테서 전화가 와서 주말에 시간 있냐고 물어봤어요.",
            "{name} 씨가 책 한 권을 추천해 줬어요.", "곧 {name} 씨 생일인데 아직 선물을 못 정했어요.",
            "어젯밤에 {name} 씨랑 영화를 봤는데 결말이 너무 감동적이었어요.", "{name} 씨가 요즘 요리를 배워서 다음에 밥을 해 준대요.",
            "{name} 씨가 새끼 고양이를 키우기 시작해서 매일 사진을 보내 줘요.", "다음 주에 {name} 씨랑 등산 가기로 약속했어요.",
        ),
        ("{name} 씨 사촌이 {city2}에 작은 가게를 열었대요.", "{name} 씨는 {company2} 면접에서 떨어졌대요.", "{name} 씨는 어릴 때 {job2}이(가) 되는 게 꿈이었어요.", "{name} 씨는 늘 {country2}에 가 보고 싶어 하는데 아직 못 갔어요."),
        ("오늘은 하루 종일 비가 와서 아무 데도 안 나갔어요.", "방금 차를 한 잔 끓여서 천천히 마시고 있어요.", "요즘 일이 좀 힘들어서 밤에 잠을 잘 못 자요.", "아래층에 새로 생긴 빵집이 꽤 맛있어요.", "주말에는 방을 제대로 정리할 생각이에요.", "아까 길에서 귀여운 강아지를 봤어요."),
        ("좋네요!", "정말요? 그래서요?", "기억해 둘게요.", "재미있네요."),
        ("오늘은 여기까지 해요.", "네, 잘 자요.", "내일 봐요!", "잘 자요!"),
    ),
    Language(
        "ru",
        "ru_RU",
        "Cyrillic",
        {
            "city": ("{name} в прошлом месяце переехал(а) в город {city} и наслаждается тихой жизнью.", "В каком городе сейчас живёт {name}?", "Кто живёт в городе {city}?"),
            "company": ("{name} сейчас работает в компании {company} и каждый день очень занят(а).", "В какой компании работает {name}?", "Кто работает в компании {company}?"),
            "job": ("{name} по профессии {job}, уже несколько лет.", "Кем работает {name}?", "Кто работает по профессии {job}?"),
            "country": ("{name} прошлым летом две недели путешествовал(а), страна: {country}.", "В какую страну ездил(а) {name}?", "Кто ездил в страну {country}?"),
        },
        (
            "Сегодня {name} пообедал(а) со мной, хорошо поговорили.", "{name} позвонил(а) и спросил(а), свободен ли я в выходные.",
            "{name} посоветовал(а) мне одну книгу.", "Скоро у {name} день рождения, а я ещё не выбрал подарок.",
            "Вчера вечером {name} смотрел(а) со мной фильм, концовка была трогательной.",
            "{name} сейчас учится готовить и обещает нас угостить.", "{name} завёл(а) котёнка и каждый день присылает фотографии.",
            "{name} договорился(ась) со мной сходить в горы на следующей неделе.",
        ),
        ("Двоюродный брат, о котором рассказывал(а) {name}, открыл магазин, город {city2}.", "{name} не прошёл(прошла) собеседование в компании {company2}.", "{name} в детстве мечтал(а) стать: {job2}.", "{name} давно мечтает поехать в страну {country2}, но пока не получилось."),
        ("Сегодня весь день шёл дождь, и я никуда не выходил.", "Я только что заварил чай и пью его не спеша.", "В последнее время на работе тяжело, плохо сплю по ночам.", "Новая пекарня внизу оказалась очень неплохой.", "На выходных собираюсь как следует убраться в комнате.", "Только что видел на улице очень милую собаку."),
        ("Здорово!", "Правда? И что дальше?", "Я запомню.", "Интересно."),
        ("На сегодня всё.", "Хорошо, спокойной ночи.", "До завтра!", "Спокойной ночи!"),
    ),
)  # fmt: skip


def person_values(fake: object, locale: str) -> dict[str, str]:
    """One person's name and facts from Faker's locale data."""
    f = fake
    if locale == "ru_RU":  # first and last name of one gender (Russian surnames agree with it)
        male = f.random.random() < 0.5  # type: ignore[attr-defined]
        first, last = (f.first_name_male, f.last_name_male) if male else (f.first_name_female, f.last_name_female)  # type: ignore[attr-defined]
        name = f"{first()} {last()}"
    else:
        name = f.name()  # type: ignore[attr-defined]
    city = f.city_name() if locale == "ru_RU" else f.city()  # type: ignore[attr-defined]
    values = {"name": name, "city": city, "company": f.company(), "job": f.job(), "country": f.country()}  # type: ignore[attr-defined]
    others = {"city2": f.city_name() if locale == "ru_RU" else f.city(), "company2": f.company(), "job2": f.job()}  # type: ignore[attr-defined]
    return values | others | {"country2": f.country()}  # type: ignore[attr-defined]


def build_chat(lang: Language, people: int) -> Chat:
    """One chat in ``lang``: ``people`` people x (4 facts + 12 mentions) user turns, each answered by the bot."""
    from faker import Faker

    fake = Faker(lang.locale)
    fake.seed_instance(FAKER_SEED)
    rng = random.Random(FAKER_SEED)
    sep = " " if lang.code in ("ko", "ru") else ""

    def ramble(text: str) -> str:
        """The sentence between two of the chatter's, in random order around it."""
        before, after = rng.sample(lang.chatter, 2)
        return sep.join((before, text, after))

    persons: list[dict[str, str]] = []
    seen: set[str] = set()
    while len(persons) < people:
        p = person_values(fake, lang.locale)
        if p["name"] not in seen:  # one name, one person: the question must have one answer
            seen.add(p["name"])
            persons.append(p)
    lines: list[tuple[str, str | None]] = []  # (user text, the question it answers or None)
    counts = {fact: Counter(p[fact] for p in persons) for fact in lang.facts}
    for p in persons:
        for fact, (stmt, by_name, by_value) in lang.facts.items():
            # Half the questions name the value ("who works at X?"), when it is this person's alone.
            q = by_value if counts[fact][p[fact]] == 1 and rng.random() < 0.5 else by_name
            lines.append((ramble(stmt.format(**p)), q.format(**p)))
        lines += [(ramble(m.format(**p)), None) for m in (*lang.mentions, *lang.near_misses)]
    rng.shuffle(lines)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    turns: list[Turn] = []
    questions: list[Question] = []

    def add(role: str, text: str) -> str:
        dia_id = f"D1:{len(turns) + 1}"
        speaker = "Mika" if role == "user" else "Aoi"
        turns.append(Turn(dia_id, speaker, role, text, start + timedelta(minutes=len(turns))))
        return dia_id

    for text, question in lines:
        dia_id = add("user", text)
        add("assistant", rng.choice(lang.replies))
        if question is not None:
            questions.append(Question(question, 4, (dia_id,)))
    for text in lang.closing:
        add("user" if len(turns) % 2 == 0 else "assistant", text)
    return Chat(f"ml-{lang.code}", "Mika", "Aoi", turns, questions)


def build_chats(people: int, languages: tuple[str, ...] = ()) -> list[Chat]:
    return [build_chat(lang, people) for lang in LANGUAGES if not languages or lang.code in languages]
