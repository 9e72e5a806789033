VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_int(numeral):
    total = 0
    for char in numeral.upper():
        if char not in VALUES:
            raise ValueError(f"not a roman numeral: {numeral!r}")
        total += VALUES[char]
    return total
