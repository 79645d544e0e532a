#!/usr/bin/python3
"""A deterministic corpus for comparing tokenizer.json encoders: N records,
separated by single 0x00 bytes (no record contains 0x00; records may contain
\\n and \\r).

Records mix, in about even shares and also within one record: English prose
(contractions in mixed case, smart quotes), C/Python/JS snippets (spaces and
tab indentation, operators, string literals), numbers (1-12 digits, decimals,
thousands separators, dates, phone numbers, non-ASCII digits), whitespace
runs (spaces, tabs, \\n, \\r\\n, lone \\r, Unicode spaces, controls), CJK (Chinese,
Japanese kana and kanji, Hangul), emoji (ZWJ sequences, skin tones, flags,
keycaps, tags, variation selectors), combining marks (decomposed and
precomposed forms, Vietnamese, Devanagari, Arabic, Hebrew with points,
stacked marks), the special and added token strings of the llama2, llama3,
qwen3, gemma3 and deepseek_v3 vocabularies with near misses, and the
metaspace character U+2581 and byte-token look-alikes such as <0x41>.
About 5% of the records hold invalid UTF-8; a few records are empty and a
few are 2-10 KB long.

Every valid character is assigned in Unicode 14.0 (the unicodedata of the
Python 3.11 that the encoder's tables come from): a generated code point of
category Cn is drawn again, and every record is checked before it is
written.

  make_corpus.py --out FILE [--seed 0] [--lines 5000]
"""
import argparse
import random
import sys
import unicodedata

assert unicodedata.unidata_version == "14.0.0", unicodedata.unidata_version


def assigned(cp):
    c = chr(cp)
    return unicodedata.category(c) not in ("Cn", "Cs") and cp != 0


def rand_cp(rng, lo, hi):
    """A random assigned code point in [lo, hi]."""
    while True:
        cp = rng.randint(lo, hi)
        if assigned(cp):
            return chr(cp)


def rand_from(rng, ranges, n):
    return "".join(rand_cp(rng, *rng.choice(ranges)) for _ in range(n))


# ---- English prose ---------------------------------------------------------

WORDS = """the of and to in is was he for it with as his on be at by had are
but from or have an they which one you were her all she there would their we
him been has when who will more no if out so said what up its about into than
them can only other new some could time these two may then do first any my now
such like our over man me even most made after also did many before must
through back years where much your way well down should because each just
those people how too little state good very make world still own see men work
long get here between both life being under never day same another know while
last might us great old year off come since against go came right used take
three states himself few house use during without again place American around
however home small found Mrs thought went say part once general high upon
school every don't does got united left number course war until always away
something fact though water less public put thing almost hand enough far took
head yet government system better set told nothing night end why called didn't
eyes find going look asked later knew point next program city business give
group toward young days let room president side social given present several
order national second possible rather per face among form important often
things looking early white case John become large big need four within felt
along children saw best church ever least power development light seemed
family interest want members mind country area others done turned although
open God service certain kind problem began different door thus help means
sense whole matter perhaps itself York it's times law human line above name
example action company hands local show whether five history gave today either
act feet across taken past quite anything seen having death week experience
body word half really field am car words already themselves I'm information
tell together college shall money period held keep sure probably free seems
political real cannot behind question air office making brought whose special
heard major problems ago became federal moment study available known result
street economic boy position reason change south board individual job areas
society west close turn love community true court force full seem wife future
age wanted department voice center woman control common necessary policy front
six girl clear further land feel party able mother music education university
child effect level stood military short town total outside rate physical
tokenizer compiler kernel tensor matrix byte vocabulary merge encoder decoder
""".split()

CONTRACTIONS = """don't I'll she's We'RE IT'S can't they've you'd I'm won't
isn't O'Neil rock'n'roll o'clock LET'S He'D you'LL they'Re We've I'D She'll
DOESN'T shouldn't'VE y'all ma'am 'tis 'twas Jack's James' cats' it'S
don’t I’ll she’s we’re""".split()

PUNCT_END = [".", ".", ".", "!", "?", "...", "…", "?!", ":", ";"]
QUOTES = [('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("«", "»"),
          ("(", ")"), ("[", "]"), ("—", "—")]


def word(rng):
    w = rng.choice(CONTRACTIONS) if rng.random() < 0.12 else rng.choice(WORDS)
    r = rng.random()
    if r < 0.06:
        w = w.upper()
    elif r < 0.12:
        w = w.capitalize()
    elif r < 0.14:
        w = "".join(c.upper() if rng.random() < 0.5 else c for c in w)
    return w


def sentence(rng):
    words = [word(rng) for _ in range(rng.randint(3, 18))]
    words[0] = words[0][:1].upper() + words[0][1:]
    for i in range(1, len(words) - 1):
        if rng.random() < 0.08:
            words[i] += rng.choice([",", ",", ";", ":", " -", " –"])
    if rng.random() < 0.15:
        i = rng.randrange(len(words))
        j = min(len(words), i + rng.randint(1, 4))
        q = rng.choice(QUOTES)
        words[i] = q[0] + words[i]
        words[j - 1] += q[1]
    return " ".join(words) + rng.choice(PUNCT_END)


def prose(rng):
    return " ".join(sentence(rng) for _ in range(rng.randint(1, 4)))


# ---- source code -----------------------------------------------------------

IDENTS = """i j k n x y buf len count total result value data node next prev
ptr tmp idx key item items src dst out err ctx self cfg token_ids vocab merges
rank score width height offset size capacity head tail left right parse_line
read_file encode_bytes Tokenizer BpeModel MAX_LEN kBufSize __init__ _private
camelCase snake_case SCREAMING_CASE x1 y2 i64 u8""".split()

C_TEMPLATES = [
    "#include <{hdr}>\n\nstatic int {a}(const char *{b}, size_t {c}) {{\n"
    "{I}int {d} = 0;\n{I}for (size_t i = 0; i < {c}; ++i) {{\n"
    "{I}{I}if ({b}[i] == '\\n' || {b}[i] == '\\t') {d}++;\n{I}}}\n"
    "{I}return {d} >> 1;\n}}\n",
    "struct {A} {{\n{I}uint32_t {a};\n{I}float {b}[{n}];\n{I}struct {A} *{c};\n}};\n",
    "if ({a} != NULL && {b}->{c} >= {n}) {{\n{I}fprintf(stderr, \"error: %s (%d)\\n\", "
    "{a}, {n});\n{I}return -1;\n}} else {{ {b}->{c} += {a}[{n}] & 0x{h}; }}\n",
    "#define {A}({a}, {b}) (({a}) < ({b}) ? ({a}) : ({b}))\n"
    "/* {s} */\nuint64_t {c} = {n}ULL << 3; // {s}\n",
    "while (*{a}++ = *{b}++) ;\nswitch ({c}) {{ case 0: break; default: {c} ^= ~{n}; }}\n",
]

PY_TEMPLATES = [
    "def {a}({b}, {c}=None):\n{I}\"\"\"{s}\"\"\"\n{I}if {c} is None:\n"
    "{I}{I}{c} = [{n}, {m}]\n{I}return {{k: v for k, v in zip({b}, {c})}}\n",
    "class {A}:\n{I}def __init__(self, {a}: int = {n}) -> None:\n"
    "{I}{I}self.{a} = {a}\n{I}{I}self.{b}: list[str] = []\n\n"
    "{I}def __repr__(self):\n{I}{I}return f\"{A}({{self.{a}!r}})\"\n",
    "for {a} in range({n}):\n{I}if {a} % 3 == 0 and not {b}:\n"
    "{I}{I}print('{s}', {a} ** 2, sep='\\t')\n{I}elif {a} >= {m}: break\n",
    "with open('{b}.txt', 'rb') as f:\n{I}{c} = f.read().split(b'\\x00')\n"
    "{a} = [x.decode('utf-8', errors='replace') for x in {c}]  # {s}\n",
    "try:\n{I}{a} = {b}[{n}:{m}:-1] @ {c}\nexcept (KeyError, IndexError) as e:\n"
    "{I}raise ValueError(r'\\d+\\s*') from e\n",
]

JS_TEMPLATES = [
    "function {a}({b}, {c} = {n}) {{\n{I}const {d} = {b}.map((x) => x * {c});\n"
    "{I}return {d}.filter(Boolean).join('{s}');\n}}\n",
    "export const {A} = async ({a}) => {{\n{I}const res = await fetch(`/api/${{{a}}}?n={n}`);\n"
    "{I}if (!res.ok) throw new Error(\"HTTP \" + res.status);\n{I}return res.json();\n}};\n",
    "let {a} = {{ {b}: [{n}, {m}], '{c}': null, \"{d}\": true }};\n"
    "{a}.{b} ??= []; {a}.{b}.push(...[1, 2, 3]); // {s}\n",
    "for (let i = 0; i < {n}; i++) {{\n"
    "{I}if (({a} & 0x{h}) === 0 || {b} !== undefined) continue;\n"
    "{I}{c} += i >>> 2;\n}}\n",
    "<div class=\"{a}\"><h1>{s}</h1><table><tr><td>{n}</td><td>{m}</td></tr></table>"
    "<b>{b}</b> <code>{c}()</code></div>\n",
]

HEADERS = ["stdio.h", "stdlib.h", "string.h", "stdint.h", "assert.h"]


def code(rng):
    tmpl = rng.choice(rng.choice([C_TEMPLATES, PY_TEMPLATES, JS_TEMPLATES]))
    names = rng.sample(IDENTS, 4)
    indent = rng.choice(["    ", "    ", "  ", "\t", "\t", "        ", " \t"])
    text = tmpl.format(
        a=names[0], b=names[1], c=names[2], d=names[3],
        A=names[0].capitalize() + "T", I=indent, hdr=rng.choice(HEADERS),
        n=rng.randint(0, 10 ** rng.randint(1, 6)), m=rng.randint(0, 999),
        h="%X" % rng.randint(0, 0xFFFF), s=sentence(rng).replace("\n", " "))
    if rng.random() < 0.2:  # Windows line endings
        text = text.replace("\n", "\r\n")
    if rng.random() < 0.2:  # trailing spaces on some lines
        text = "\n".join(l + " " * rng.randint(0, 3) for l in text.split("\n"))
    return text


# ---- numbers ---------------------------------------------------------------

DIGIT_SETS = ["0123456789", "٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵۶۷۸۹", "०१२३४५६७८९",
              "０１２３４５６７８９", "০১২৩৪৫৬৭৮৯", "๐๑๒๓๔๕๖๗๘๙"]


def integer(rng, lo=1, hi=12):
    n = rng.randint(lo, hi)
    return str(rng.randint(1, 9)) + "".join(rng.choice("0123456789")
                                            for _ in range(n - 1))


def thousands(s, sep):
    head = len(s) % 3 or 3
    return s[:head] + "".join(sep + s[i:i + 3] for i in range(head, len(s), 3))


def number(rng):
    r = rng.randrange(14)
    if r == 0:
        return integer(rng)
    if r == 1:
        return integer(rng, 1, 6) + "." + integer(rng, 1, 6)
    if r == 2:
        return thousands(integer(rng, 4, 12), rng.choice([",", ".", " ", "\u202f", "'"]))
    if r == 3:
        return "%04d-%02d-%02d" % (rng.randint(1000, 2099), rng.randint(1, 12),
                                   rng.randint(1, 28))
    if r == 4:
        return "%02d/%02d/%04d %02d:%02d:%02d" % (
            rng.randint(1, 12), rng.randint(1, 28), rng.randint(1900, 2099),
            rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
    if r == 5:
        return rng.choice(["+1 (%03d) %03d-%04d", "+44 %04d %03d %04d",
                           "%03d.%03d.%04d", "(0%02d) %04d-%04d"]) % (
            rng.randint(100, 999), rng.randint(100, 999), rng.randint(0, 9999))
    if r == 6:
        return "-" + integer(rng, 1, 8) + rng.choice(["", "%", "€", " USD", "km", "ms"])
    if r == 7:
        return "%.*e" % (rng.randint(0, 8), rng.uniform(-1e12, 1e12))
    if r == 8:
        return "0x%0*X" % (rng.randint(1, 16), rng.getrandbits(64))
    if r == 9:
        return "v%d.%d.%d" % (rng.randint(0, 20), rng.randint(0, 99), rng.randint(0, 999))
    if r == 10:  # non-ASCII decimal digits (\p{N}, Nd)
        digits = rng.choice(DIGIT_SETS)
        return "".join(rng.choice(digits) for _ in range(rng.randint(1, 12)))
    if r == 11:  # other numerics: Nl and No
        return "".join(rng.choice("½¼¾²³¹⁰⁴ⅠⅡⅢⅣⅫↂ①②⑳㊿〇𝟘𝟙𝟚") for _ in range(rng.randint(1, 6)))
    if r == 12:
        return integer(rng, 12, 40)  # long digit runs
    return "%d,%d" % (rng.randint(0, 999), rng.randint(0, 99))  # decimal comma


def numbers(rng):
    parts = [number(rng) for _ in range(rng.randint(1, 6))]
    seps = [" ", ", ", "; ", "\n", " - ", "x", "", " and "]
    return "".join(p + rng.choice(seps) for p in parts).rstrip()


# ---- whitespace ------------------------------------------------------------

# U+0085 and U+FEFF are whitespace to only one of JavaScript's \s (U+FEFF)
# and Unicode's White_Space (U+0085); U+200B and U+180E are to neither;
# U+001C-U+001F are to Python's str.isspace() only. Other C0/C1 controls too.
UNICODE_SPACES = ["\u00a0", "\u2002", "\u2003", "\u2009", "\u200a", "\u202f",
                  "\u205f", "\u3000", "\u1680", "\u2028", "\u2029", "\u0085",
                  "\ufeff", "\u200b", "\u180e", "\x0b", "\x0c", "\x1c", "\x1f",
                  "\x01", "\x1b", "\x7f", "\x9f"]


def ws_run(rng):
    r = rng.random()
    if r < 0.6:
        pool = [" ", " ", " ", "\t", "\n", "\r\n", "\r", "\n\n"]
    else:
        pool = [" ", "\t", "\n"] + UNICODE_SPACES
    return "".join(rng.choice(pool) for _ in range(rng.randint(1, 12)))


def whitespace(rng):
    r = rng.randrange(6)
    if r == 0:  # only whitespace
        return ws_run(rng)
    if r == 1:  # leading and trailing
        return ws_run(rng) + sentence(rng) + ws_run(rng)
    if r == 2:  # lines that are only whitespace, trailing spaces
        lines = [rng.choice([sentence(rng), " " * rng.randint(1, 8), "\t\t", ""])
                 + " " * rng.randint(0, 4) for _ in range(rng.randint(2, 6))]
        return rng.choice(["\n", "\r\n"]).join(lines)
    if r == 3:  # words between runs
        return "".join(word(rng) + ws_run(rng) for _ in range(rng.randint(2, 8)))
    if r == 4:  # long single runs (gemma3 has added tokens for up to 31 \n or \t)
        return rng.choice([" ", "\n", "\t", "\r\n", "▁"]) * rng.randint(2, 40) + word(rng)
    return " " * rng.randint(1, 6) + rng.choice(["\n", "\r\n", "\r", "\n\n"])


# ---- CJK ---------------------------------------------------------------------

CJK_PHRASES = [
    "我们今天学习自然语言处理。", "这是一个测试，包含标点符号！", "人工智能的发展非常迅速",
    "中华人民共和国", "北京欢迎你", "編碼器與解碼器", "繁體中文測試", "模型參數：七十億",
    "こんにちは、世界！", "私は学生です。", "東京タワーに行きました", "カタカナとひらがな",
    "ラーメンを食べたい", "ｶﾀｶﾅ ﾊﾝｶｸ", "日本語の文章を分割する",
    "안녕하세요, 세계!", "한국어 토크나이저 테스트", "대한민국 서울특별시", "감사합니다.",
    "「引用」『二重』【強調】〈括弧〉", "（全角）１２３ＡＢＣ！？", "𠮷野家と𩸽",
]
CJK_RANGES = [(0x4E00, 0x9FA5), (0x4E00, 0x9FFF), (0x3400, 0x4DBF),
              (0x20000, 0x2A6DF), (0x3041, 0x3096), (0x30A1, 0x30FA),
              (0xAC00, 0xD7A3), (0x3000, 0x303F), (0xFF01, 0xFF5E),
              (0xFF61, 0xFF9F), (0xF900, 0xFAD9)]


def cjk(rng):
    r = rng.random()
    if r < 0.5:
        return "".join(rng.choice(CJK_PHRASES) for _ in range(rng.randint(1, 3)))
    if r < 0.85:
        return rand_from(rng, CJK_RANGES[:1] * 4 + CJK_RANGES, rng.randint(1, 24))
    # kana with a combining voiced mark, conjoining jamo: NFC composes both
    parts = []
    for _ in range(rng.randint(1, 6)):
        if rng.random() < 0.5:
            parts.append(rng.choice("かきくけこさしすせそたちつてとはひふへほカキクケコハヒフヘホ")
                         + rng.choice("\u3099\u309a"))
        else:
            parts.append(chr(rng.randint(0x1100, 0x1112)) + chr(rng.randint(0x1161, 0x1175))
                         + (chr(rng.randint(0x11A8, 0x11C2)) if rng.random() < 0.5 else ""))
    return "".join(parts)


# ---- emoji -----------------------------------------------------------------

EMOJI_RANGES = [(0x1F600, 0x1F64F), (0x1F300, 0x1F5FF), (0x1F680, 0x1F6FF),
                (0x1F900, 0x1F9FF), (0x1FA70, 0x1FAFF), (0x2600, 0x26FF),
                (0x2700, 0x27BF)]
ZWJ = "\u200d"
ZWJ_SEQUENCES = [
    "👨‍👩‍👧‍👦", "👩‍💻", "🧑🏽‍🚀", "🏳️‍🌈", "🏳️‍⚧️", "❤️‍🔥", "👁️‍🗨️", "🐻‍❄️",
    "👩🏿‍🤝‍👨🏻", "🧔🏼‍♂️", "🏃🏾‍♀️", "😶‍🌫️", "🫱🏻‍🫲🏿",
]
FLAGS = ["US", "GB", "JP", "DE", "FR", "CN", "KR", "IN", "BR", "VN", "IL", "EG",
         "UA", "ZA", "XK", "EU", "UN"]
TAG_FLAGS = ["gbeng", "gbsct", "gbwls"]


def flag(code2):
    return "".join(chr(0x1F1E6 + ord(c) - ord("A")) for c in code2)


def emoji_one(rng):
    r = rng.randrange(8)
    if r == 0:
        return rng.choice(ZWJ_SEQUENCES)
    if r == 1:  # skin tone
        return rng.choice("👋👍👏🙌🤝🧑👩👨🤞✋") + chr(rng.randint(0x1F3FB, 0x1F3FF))
    if r == 2:
        return flag(rng.choice(FLAGS)) if rng.random() < 0.8 else \
            flag(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") * 2)
    if r == 3:  # keycap
        return rng.choice("0123456789#*") + "\ufe0f\u20e3"
    if r == 4:  # tag sequence
        tags = "".join(chr(0xE0000 + ord(c)) for c in rng.choice(TAG_FLAGS))
        return "🏴" + tags + "\U000E007F"
    if r == 5:  # text/emoji presentation selectors
        return rng.choice("☺❤✌☀✔⚠♻©®™↔") + rng.choice(["\ufe0e", "\ufe0f", ""])
    if r == 6:  # an ad-hoc ZWJ chain
        return ZWJ.join(rand_cp(rng, *rng.choice(EMOJI_RANGES))
                        for _ in range(rng.randint(2, 4)))
    return rand_cp(rng, *rng.choice(EMOJI_RANGES))


def emoji(rng):
    out = []
    for _ in range(rng.randint(1, 6)):
        out.append(emoji_one(rng) * (rng.randint(2, 5) if rng.random() < 0.1 else 1))
        out.append(rng.choice(["", "", " ", word(rng) + " ", "!"]))
    return "".join(out)


# ---- combining marks and scripts with them ----------------------------------

SCRIPT_PHRASES = [
    "Tiếng Việt có dấu", "Xin chào thế giới", "Người Việt Nam yêu hòa bình",
    "Đường phố Hà Nội", "नमस्ते दुनिया", "हिन्दी भाषा", "क़िला ज़मीन फ़िल्म",
    "संस्कृतम्", "مَرْحَبًا بِالْعَالَمِ", "السَّلَامُ عَلَيْكُمْ", "اللغة العربية",
    "שָׁלוֹם עוֹלָם", "בְּרֵאשִׁית בָּרָא", "עִבְרִית", "สวัสดีครับ",
    "ภาษาไทย", "Καλημέρα κόσμε", "Ἀρχιμήδης", "Привет, мир! Ёлка и йод",
    "Ærøskøbing Å Ångström", "ﬁnance ﬂow", "Ǆemal ǅ ǆ", "𝐀𝐁𝐂 𝔸𝕓𝕔",
    "ઘર ਪੰਜਾਬੀ தமிழ் ಕನ್ನಡ", "ལྷ་ས", "ᏣᎳᎩ", "ꯃꯤꯇꯩ",
]
# precomposed -> decomposed pairs, and characters NFC changes (singletons,
# composition exclusions): U+212B, U+2126, U+0958, U+0344, U+F900, U+1E9B.
NFC_CHANGED = ["\u212b", "\u2126", "\u0958", "\u0344", "\uf900", "\u1e9b\u0323",
               "\u0343", "\u0374", "\u037e", "\u0387", "\u1f71", "\u2000"]


def combining(rng):
    r = rng.randrange(7)
    if r == 0:
        s = rng.choice(SCRIPT_PHRASES)
        return unicodedata.normalize(rng.choice(["NFC", "NFD", "NFKD"]), s) \
            if rng.random() < 0.5 else s
    if r == 1:  # e + U+0301 vs é, in words
        w = rng.choice(["cafe\u0301", "café", "re\u0301sume\u0301", "résumé",
                        "nai\u0308ve", "naïve", "A\u030angstro\u0308m", "Ångström",
                        "man\u0303ana", "mañana", "Zu\u0308rich", "Zürich"])
        return w
    if r == 2:  # stacked marks, in canonical and non-canonical order
        base = rng.choice("aeiouxyzAOU")
        marks = "".join(chr(rng.randint(0x0300, 0x036F)) for _ in range(rng.randint(1, 8)))
        return base + marks
    if r == 3:
        return rng.choice(NFC_CHANGED) * rng.randint(1, 3)
    if r == 4:  # marks after a space, at the start, after punctuation
        before = rng.choice(["", " ", "-", "'", "1"])
        return before + chr(rng.randint(0x0300, 0x036F)) + word(rng)
    if r == 5:  # marks from other blocks: Devanagari, Arabic, Hebrew, Thai
        base = rng.choice(["क", "ب", "ש", "ก", "a"])
        marks = rand_from(rng, [(0x0900, 0x0903), (0x093A, 0x094F), (0x064B, 0x065F),
                                (0x05B0, 0x05C7), (0x0E31, 0x0E3A), (0x1AB0, 0x1ACE),
                                (0x20D0, 0x20F0)], rng.randint(1, 4))
        return base + marks
    return " ".join(rng.choice(SCRIPT_PHRASES) for _ in range(rng.randint(2, 4)))


# ---- special tokens, metaspace, byte tokens --------------------------------

SPECIALS = [
    # llama2
    "<s>", "</s>", "<unk>",
    # llama3
    "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|eot_id|>", "<|reserved_special_token_0|>", "<|reserved_special_token_17|>",
    "<|reserved_special_token_250|>",
    # qwen3
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_pad|>", "<tool_call>",
    "</tool_call>", "<think>", "</think>", "<|fim_prefix|>", "<|file_sep|>",
    # gemma3 (special and added)
    "<bos>", "<eos>", "<pad>", "<mask>", "[multimodal]", "<start_of_turn>", "<end_of_turn>",
    "<start_of_image>", "<image_soft_token>", "<unused0>", "<unused123>", "<unused6241>",
    "<h1>", "</h1>", "<table>", "<td>", "</td>", "<b>", "</b>", "<code>", "<blockquote>",
    # deepseek_v3
    "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", "<｜User｜>",
    "<｜Assistant｜>", "<|EOT|>", "<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>",
    "<｜place▁holder▁no▁0｜>", "<｜place▁holder▁no▁799｜>",
]
NEAR_MISSES = [
    "<s", "s>", "< s>", "<s >", "<S>", "</S>", "<<s>>", "<unk", "<|im_start|", "|im_end|>",
    "<|IM_START|>", "<|begin_of_text>", "<|reserved_special_token_999|>", "<unused99999>",
    "<｜begin_of_sentence｜>", "<|begin▁of▁sentence|>", "<｜User|>", "<think >", "<H1>",
    "<start_of_turn", "<end_of_turn>>", "<<bos>", "[multimodal", "<｜place▁holder▁no▁800｜>",
]
BYTE_LIKES = ["<0x41>", "<0x0A>", "<0x00>", "<0xFF>", "<0xE2><0x96><0x81>", "<0x4>",
              "<0xZZ>", "<0x41", "0x41>", "<0X41>", "<0x41><0x42>"]


def special(rng):
    r = rng.random()
    if r < 0.25:  # adjacent to each other
        return "".join(rng.choice(SPECIALS) for _ in range(rng.randint(2, 4)))
    parts = []
    for _ in range(rng.randint(1, 5)):
        pick = rng.random()
        if pick < 0.55:
            tok = rng.choice(SPECIALS)
        elif pick < 0.75:
            tok = rng.choice(NEAR_MISSES)
        else:
            tok = rng.choice(BYTE_LIKES)
        parts.append(tok)
        parts.append(rng.choice(["", " ", "  ", "\n", word(rng), " " + word(rng) + " ",
                                 sentence(rng), "▁", "\t"]))
    if rng.random() < 0.3:
        parts.insert(0, rng.choice([" ", "\n", word(rng), "▁"]))
    if rng.random() < 0.5:
        parts.pop()  # end on the token itself
    return "".join(parts)


def metaspace(rng):
    r = rng.randrange(5)
    if r == 0:
        return "▁" * rng.randint(1, 40)
    if r == 1:
        return "▁".join(word(rng) for _ in range(rng.randint(2, 6)))
    if r == 2:
        return "▁" + word(rng) + " ▁" + word(rng) + "▁ " + word(rng)
    if r == 3:
        return rng.choice(BYTE_LIKES) + word(rng) + rng.choice(BYTE_LIKES)
    return " ".join(rng.choice(["▁the", "▁▁", "▁ ", "▁\n", "▁<0x41>", "▁▁▁▁hello", "▁▁▁▁▁▁"])
                    for _ in range(rng.randint(1, 5)))


# ---- records -----------------------------------------------------------------

KINDS = [prose, code, numbers, whitespace, cjk, emoji, combining, special, metaspace]
JOINERS = ["", " ", " ", "\n", "\n\n", "\r\n", ". ", ", ", "\t", "  "]


def mixed(rng):
    """One record of 1-4 fragments of (usually) different kinds."""
    n = rng.choice([1, 1, 2, 2, 3, 4])
    text = rng.choice(KINDS)(rng)
    for _ in range(n - 1):
        text += rng.choice(JOINERS) + rng.choice(KINDS)(rng)
    return text


def long_record(rng, i):
    """2-10 KB: mostly mixed text, and a few that stress one long BPE word."""
    target = rng.randint(2048, 10240)
    shape = i % 6
    if shape == 1:
        unit = rng.choice(["a", "ab", "the", "🙂", "中", "▁", "9", "é", "e\u0301"])
    elif shape == 2:
        unit = rng.choice([" ", "\n", "\t", "\r\n", " \n"])
    else:
        unit = None
    if unit is not None:
        return unit * (target // len(unit.encode()))
    text = ""
    while len(text.encode()) < target:
        text += rng.choice(JOINERS) + mixed(rng)
    return text


# Invalid UTF-8 (never 0x00): stray continuation bytes, truncated 2/3/4-byte
# sequences, overlong forms, UTF-8 encoded surrogates, bytes F5-FF, C0/C1,
# code points past U+10FFFF.
INVALID = [
    b"\x80", b"\xbf", b"\x80\x80", b"\xa0\xa1", b"\xc3", b"\xe2\x82", b"\xe2",
    b"\xf0\x9f\x98", b"\xf0\x9f", b"\xf0", b"\xc0\xaf", b"\xc0\x80", b"\xc1\xbf",
    b"\xe0\x80\xaf", b"\xe0\x9f\xbf", b"\xf0\x80\x80\xaf", b"\xf0\x8f\xbf\xbf",
    b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xed\xa0\xbd\xed\xb8\x80", b"\xf5",
    b"\xf8\x88\x80\x80\x80",
    b"\xfc\x84\x80\x80\x80\x80", b"\xfe", b"\xff", b"\xfe\xff", b"\xf4\x90\x80\x80",
    b"\xc2", b"\xc2\x41", b"\xe1\x80\x41", b"\xc0", b"\xc1",
]


def corrupt(rng, text):
    """The UTF-8 of `text` with 1-3 invalid sequences spliced in, either at a
    character boundary or (sometimes) cutting a multi-byte character short."""
    data = text.encode()
    for _ in range(rng.randint(1, 3)):
        bad = rng.choice(INVALID)
        pos = rng.randint(0, len(data))
        if rng.random() < 0.2:
            starts = [k for k in range(len(data)) if data[k] >= 0xC0]
            if starts:  # truncate a real multi-byte character
                k = rng.choice(starts)
                data = data[:k + 1] + data[k + 1:].lstrip(bytes(range(0x80, 0xC0)))
                continue
        data = data[:pos] + bad + data[pos:]
    return data


def check_valid(text):
    for c in text:
        cp = ord(c)
        if cp == 0 or unicodedata.category(c) in ("Cn", "Cs"):
            raise AssertionError("generated U+%04X, not assigned in Unicode 14.0" % cp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lines", type=int, default=5000, help="number of records")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    n = args.lines
    order = list(range(n))
    rng.shuffle(order)
    n_empty = min(n // 10, max(3, n // 1000))
    n_long = min(n // 10, max(6, n // 400))
    empty = set(order[:n_empty])
    long_ = set(order[n_empty:n_empty + n_long])

    records, n_bad = [], 0
    for i in range(n):
        if i in empty:
            records.append(b"")
            continue
        text = long_record(rng, i) if i in long_ else mixed(rng)
        check_valid(text)
        if rng.random() < 0.05:
            data = corrupt(rng, text)
            n_bad += 1
        else:
            data = text.encode()
        assert b"\x00" not in data
        records.append(data)
    with open(args.out, "wb") as f:
        f.write(b"\x00".join(records))
    size = sum(map(len, records))
    print("make_corpus: %d records (%d empty, %d long, %d invalid UTF-8), %d bytes"
          % (n, n_empty, n_long, n_bad, size), file=sys.stderr)


if __name__ == "__main__":
    main()
