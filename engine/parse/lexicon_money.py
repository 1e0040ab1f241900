"""Words of what a job may cost and take, already folded (lower case, ё → е), both languages: currencies, budgets,
prices per time, deadlines and the spans people name ("за сутки", "by tomorrow"), and the phrases that ask for
money or time.

Same rules as `lexicon.py`: each set is one meaning; typos are left to `fuzzy.py`.
"""

from __future__ import annotations

# ── money ───────────────────────────────────────────────────────────────────────────────
CURRENCY_WORDS: dict[str, str] = {
    **dict.fromkeys(("руб", "рубль", "рубля", "рублей", "рублях", "рублям", "рубли", "рублями", "₽", "rub",
                     "rubles", "roubles", "ruble", "rouble", "р", "тр"), "RUB"),
    **dict.fromkeys(("$", "usd", "dollar", "dollars", "доллар", "доллара", "долларов", "долларах", "долларам",
                     "бакс", "бакса", "баксов", "баксах", "bucks", "usdt", "долл", "дол"), "USD"),
    **dict.fromkeys(("€", "eur", "euro", "euros", "евро"), "EUR"),
}
CURRENCY_SYMBOLS = frozenset({"$", "€", "₽"})
IN_CURRENCY = frozenset({"в", "in", "во"})  # "в рублях", "in euros"
BUDGET_WORDS = frozenset({"budget", "бюджет", "бюджета", "бюджетом", "бюджете", "бюджетик", "spend", "потратить",
                          "уложиться", "afford", "have", "есть", "limit", "лимит", "лимитом", "потрачу",
                          "уложусь", "уложимся", "cap", "максимум", "max", "не", "under", "below", "within", "до",
                          "up"})
PER_TIME = frozenset({"час", "hour", "hr", "h", "ч", "month", "месяц", "мес", "day", "день", "сутки", "hours",
                      "hourly", "час.", "gpu"})

# ── time ────────────────────────────────────────────────────────────────────────────────
HOURS_PER: dict[str, float] = {
    **dict.fromkeys(("час", "часа", "часов", "часу", "hour", "hours", "h", "hr", "hrs", "ч"), 1.0),
    **dict.fromkeys(("минут", "минуты", "минуту", "minutes", "minute", "min", "mins", "мин"), 1 / 60),
    **dict.fromkeys(("сутки", "суток", "сут", "день", "дня", "дней", "day", "days", "d"), 24.0),
    **dict.fromkeys(("неделю", "неделя", "недели", "недель", "week", "weeks", "wk"), 168.0),
    **dict.fromkeys(("месяц", "месяца", "месяцев", "month", "months"), 720.0),
}
DEADLINE_LEADS = frozenset({"за", "in", "within", "under", "by", "до", "не", "дольше", "больше", "than",
                            "deadline", "дедлайн", "дедлайном", "успеть", "уложиться", "finish", "done",
                            "max", "максимум", "менее", "меньше", "less", "at", "most", "чем", "успею", "ready",
                            "готово", "the", "срок", "сроком", "срока", "уложусь", "уложимся", "успеем"})
# after these a span may follow «в»: «уложиться в 4 дня», «уложимся в неделю»
FIT_VERBS = frozenset({"уложиться", "уложусь", "уложимся", "успеть", "успею", "успеем"})
DEADLINE_NOT = frozenset({"gpu", "гпу", "gpus", "node", "нод", "аренды", "аренду", "rental", "rent"})
NAMED_SPANS: dict[tuple[str, ...], float] = {
    ("за", "сутки"): 24, ("за", "день"): 24, ("за", "неделю"): 168, ("за", "ночь"): 12, ("за", "час"): 1,
    ("за", "полчаса"): 0.5, ("за", "пару", "часов"): 2, ("за", "пару", "дней"): 48, ("за", "выходные"): 48,
    ("за", "месяц"): 720, ("к", "завтра"): 24, ("до", "завтра"): 24, ("к", "завтрашнему"): 24,
    ("by", "tomorrow"): 24, ("overnight",): 12, ("in", "a", "day"): 24, ("within", "a", "day"): 24,
    ("in", "a", "week"): 168, ("within", "a", "week"): 168, ("in", "an", "hour"): 1, ("within", "an", "hour"): 1,
    ("over", "the", "weekend"): 48, ("in", "a", "couple", "of", "hours"): 2, ("за", "одну", "ночь"): 12,
    ("в", "течение", "суток"): 24,
    ("в", "течение", "дня"): 24, ("в", "течение", "недели"): 168, ("in", "one", "day"): 24,
}
# "к понедельнику", "до пятницы", "by Friday": the weekday (Monday = 0); the answer counts the days to it from the
# date the door passes (engine.answer.on_calendar), else takes WEEKDAY_HOURS and says so
WEEKDAYS: dict[tuple[str, ...], int] = {
    **{("к", w): d for d, w in enumerate(("понедельнику", "вторнику", "среде", "четвергу", "пятнице", "субботе",
                                          "воскресенью"))},
    **{("до", w): d for d, w in enumerate(("понедельника", "вторника", "среды", "четверга", "пятницы", "субботы",
                                           "воскресенья"))},
    **{(lead, w): d for d, w in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                           "sunday")) for lead in ("by", "till", "until", "deadline")},
    # «дедлайн пятница», «срок — среда», «дедлайн в пятницу»
    **{(lead, w): d for d, w in enumerate(("понедельник", "вторник", "среда", "четверг", "пятница", "суббота",
                                           "воскресенье")) for lead in ("дедлайн", "срок")},
    **{(lead, "в", w): d for d, w in enumerate(("понедельник", "вторник", "среду", "четверг", "пятницу", "субботу",
                                                "воскресенье")) for lead in ("дедлайн", "срок")},
}
WEEKDAY_HOURS = 72.0
NAMED_SPANS.update({k: WEEKDAY_HOURS for k in WEEKDAYS})

# ── cost / time asked ───────────────────────────────────────────────────────────────────
TIME_ASKS = (("how", "long"), ("сколько", "часов"), ("сколько", "времени"), ("сколько", "дней"),
             ("how", "many", "hours"), ("how", "many", "days"), ("за", "сколько"), ("как", "долго"),
             ("сколько", "по", "времени"), ("сколько", "займет"), ("how", "fast"), ("how", "quickly"),
             ("сколько", "учиться"), ("сколько", "обучаться"), ("training", "time"), ("время", "обучения"),
             ("сколько", "будет", "идти"), ("сколько", "суток"), ("по", "времени"), ("время", "?"),
             ("за", "скока"), ("скока", "часов"), ("скока", "времени"), ("how", "many", "hours"),
             ("сколько", "обучается"), ("сколько", "обучится"), ("долго", "ли"), ("how", "much", "time"),
             ("сколько", "идти"), ("скока", "идти"), ("сколько", "будет", "учиться"), ("как", "быстро"),
             ("скок", "по", "времени"), ("what", "time"), ("how", "many", "gpu", "hours"))
MONEY_ASKS = (("how", "much"), ("сколько", "стоит"), ("сколько", "стоить"), ("сколько", "будет", "стоить"),
              ("сколько", "денег"), ("во", "сколько"), ("сколько", "обойдется"), ("по", "деньгам"),
              ("what", "does", "it", "cost"), ("what", "will", "it", "cost"), ("сколько", "рублей"),
              ("сколько", "долларов"), ("how", "expensive"), ("сколько", "заплатить"), ("почем",),
              ("cost",), ("costs",), ("price",), ("цена",), ("стоимость",), ("стоимости",), ("цену",),
              ("budget",), ("бюджет",), ("cheapest",), ("дешевле",), ("cheaper",), ("самый", "дешевый"))
