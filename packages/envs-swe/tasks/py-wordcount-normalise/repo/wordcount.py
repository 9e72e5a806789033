from collections import Counter


def count_words(text):
    return dict(Counter(text.split()))


def most_common(text, n=1):
    counts = count_words(text)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
