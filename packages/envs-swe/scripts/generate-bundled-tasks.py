# Generates the bundled SWE task pack: for each task a tiny buggy repository, its tests, the gold
# patch (git diff of buggy -> fixed) and task.json.
import json, os, shutil, subprocess, textwrap

OUT = '/work/main/packages/envs-swe/tasks'
T = {}

def task(id, language, difficulty, statement, buggy, fixed, tests, f2p, p2p, hints=None):
    T[id] = dict(language=language, difficulty=difficulty, statement=statement, buggy=buggy, fixed=fixed, tests=tests, f2p=f2p, p2p=p2p, hints=hints)

d = lambda s: textwrap.dedent(s).lstrip('\n')

# ---------------- Python ----------------
task('py-median-even', 'python', 'easy',
 'statsmini.median returns the wrong value for lists with an even number of elements. For [1, 2, 3, 4] it should return 2.5 (the mean of the two middle values), but it returns 3.',
 {'statsmini.py': d('''
    """Small statistics helpers."""


    def mean(values):
        if not values:
            raise ValueError("mean() of an empty list")
        return sum(values) / len(values)


    def median(values):
        if not values:
            raise ValueError("median() of an empty list")
        ordered = sorted(values)
        middle = len(ordered) // 2
        return ordered[middle]
    ''')},
 {'statsmini.py': d('''
    """Small statistics helpers."""


    def mean(values):
        if not values:
            raise ValueError("mean() of an empty list")
        return sum(values) / len(values)


    def median(values):
        if not values:
            raise ValueError("median() of an empty list")
        ordered = sorted(values)
        middle = len(ordered) // 2
        if len(ordered) % 2 == 0:
            return (ordered[middle - 1] + ordered[middle]) / 2
        return ordered[middle]
    ''')},
 {'tests/test_statsmini.py': d('''
    import pytest
    from statsmini import mean, median


    def test_mean():
        assert mean([1, 2, 3, 4]) == 2.5


    def test_median_odd():
        assert median([3, 1, 2]) == 2


    def test_median_even():
        assert median([4, 1, 3, 2]) == 2.5


    def test_median_empty():
        with pytest.raises(ValueError):
            median([])
    ''')},
 ['tests/test_statsmini.py::test_median_even'],
 ['tests/test_statsmini.py::test_mean', 'tests/test_statsmini.py::test_median_odd', 'tests/test_statsmini.py::test_median_empty'])

task('py-slugify-separators', 'python', 'easy',
 'textutil.slugify("Hello,  World!") returns "hello--world-" but should return "hello-world": runs of separators must collapse into one hyphen and there must be no leading or trailing hyphens.',
 {'textutil.py': d('''
    import re


    def slugify(text):
        """Lower-case ASCII slug: letters and digits joined by hyphens."""
        lowered = text.lower()
        return re.sub(r"[^a-z0-9]", "-", lowered)
    ''')},
 {'textutil.py': d('''
    import re


    def slugify(text):
        """Lower-case ASCII slug: letters and digits joined by hyphens."""
        lowered = text.lower()
        return re.sub(r"[^a-z0-9]+", "-", lowered).strip("-")
    ''')},
 {'tests/test_textutil.py': d('''
    from textutil import slugify


    def test_slugify_simple():
        assert slugify("hello") == "hello"


    def test_slugify_collapses_separators():
        assert slugify("Hello,  World!") == "hello-world"


    def test_slugify_trims_hyphens():
        assert slugify("  --Tea & Cake--  ") == "tea-cake"
    ''')},
 ['tests/test_textutil.py::test_slugify_collapses_separators', 'tests/test_textutil.py::test_slugify_trims_hyphens'],
 ['tests/test_textutil.py::test_slugify_simple'])

task('py-range-inclusive', 'python', 'easy',
 'ranges.parse_range("1-3") returns [1, 2]; ranges in this project are inclusive, so it must return [1, 2, 3]. "5" alone must keep returning [5].',
 {'ranges.py': d('''
    def parse_range(spec):
        """Parse "a-b" (inclusive) or a single number into a list of ints."""
        spec = spec.strip()
        if "-" not in spec:
            return [int(spec)]
        start, end = spec.split("-", 1)
        return list(range(int(start), int(end)))


    def parse_ranges(spec):
        result = []
        for part in spec.split(","):
            if part.strip():
                result.extend(parse_range(part))
        return result
    ''')},
 {'ranges.py': d('''
    def parse_range(spec):
        """Parse "a-b" (inclusive) or a single number into a list of ints."""
        spec = spec.strip()
        if "-" not in spec:
            return [int(spec)]
        start, end = spec.split("-", 1)
        return list(range(int(start), int(end) + 1))


    def parse_ranges(spec):
        result = []
        for part in spec.split(","):
            if part.strip():
                result.extend(parse_range(part))
        return result
    ''')},
 {'tests/test_ranges.py': d('''
    from ranges import parse_range, parse_ranges


    def test_parse_single():
        assert parse_range("5") == [5]


    def test_parse_range_inclusive():
        assert parse_range("1-3") == [1, 2, 3]


    def test_parse_ranges_list():
        assert parse_ranges("1-2, 7") == [1, 2, 7]
    ''')},
 ['tests/test_ranges.py::test_parse_range_inclusive', 'tests/test_ranges.py::test_parse_ranges_list'],
 ['tests/test_ranges.py::test_parse_single'])

task('py-roman-subtractive', 'python', 'medium',
 'roman.to_int("IV") returns 6 and roman.to_int("MCMXCIV") returns 2216; subtractive notation (IV = 4, IX = 9, XL = 40, CM = 900, ...) is not handled. Additive numerals like "XIII" already work.',
 {'roman.py': d('''
    VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


    def to_int(numeral):
        total = 0
        for char in numeral.upper():
            if char not in VALUES:
                raise ValueError(f"not a roman numeral: {numeral!r}")
            total += VALUES[char]
        return total
    ''')},
 {'roman.py': d('''
    VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


    def to_int(numeral):
        total = 0
        upper = numeral.upper()
        for index, char in enumerate(upper):
            if char not in VALUES:
                raise ValueError(f"not a roman numeral: {numeral!r}")
            value = VALUES[char]
            following = VALUES.get(upper[index + 1]) if index + 1 < len(upper) else None
            if following is not None and following > value:
                total -= value
            else:
                total += value
        return total
    ''')},
 {'tests/test_roman.py': d('''
    import pytest
    from roman import to_int


    def test_additive():
        assert to_int("XIII") == 13


    def test_subtractive():
        assert to_int("IV") == 4
        assert to_int("IX") == 9


    def test_long_numeral():
        assert to_int("MCMXCIV") == 1994


    def test_invalid():
        with pytest.raises(ValueError):
            to_int("ABC")
    ''')},
 ['tests/test_roman.py::test_subtractive', 'tests/test_roman.py::test_long_numeral'],
 ['tests/test_roman.py::test_additive', 'tests/test_roman.py::test_invalid'])

task('py-wordcount-normalise', 'python', 'medium',
 'wordcount.count_words("The cat. the CAT!") returns {"The": 1, "cat.": 1, "the": 1, "CAT!": 1}. Words must be counted case-insensitively with surrounding punctuation stripped: {"the": 2, "cat": 2}.',
 {'wordcount.py': d('''
    from collections import Counter


    def count_words(text):
        return dict(Counter(text.split()))


    def most_common(text, n=1):
        counts = count_words(text)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
    ''')},
 {'wordcount.py': d('''
    import string
    from collections import Counter


    def count_words(text):
        words = (word.strip(string.punctuation).lower() for word in text.split())
        return dict(Counter(word for word in words if word))


    def most_common(text, n=1):
        counts = count_words(text)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
    ''')},
 {'tests/test_wordcount.py': d('''
    from wordcount import count_words, most_common


    def test_simple():
        assert count_words("a b a") == {"a": 2, "b": 1}


    def test_case_and_punctuation():
        assert count_words("The cat. the CAT!") == {"the": 2, "cat": 2}


    def test_most_common():
        assert most_common("x y y", 1) == [("y", 2)]
    ''')},
 ['tests/test_wordcount.py::test_case_and_punctuation'],
 ['tests/test_wordcount.py::test_simple', 'tests/test_wordcount.py::test_most_common'])

task('py-deep-merge', 'python', 'medium',
 'config.deep_merge({"db": {"host": "a", "port": 1}}, {"db": {"port": 2}}) returns {"db": {"port": 2}}, losing "host". Nested dictionaries must be merged recursively; other values from the second argument still win. The inputs must not be modified.',
 {'config.py': d('''
    def deep_merge(base, override):
        """Return a new dict: base updated with override, recursively for nested dicts."""
        result = dict(base)
        for key, value in override.items():
            result[key] = value
        return result
    ''')},
 {'config.py': d('''
    def deep_merge(base, override):
        """Return a new dict: base updated with override, recursively for nested dicts."""
        result = dict(base)
        for key, value in override.items():
            if isinstance(result.get(key), dict) and isinstance(value, dict):
                result[key] = deep_merge(result[key], value)
            else:
                result[key] = value
        return result
    ''')},
 {'tests/test_config.py': d('''
    from config import deep_merge


    def test_flat_merge():
        assert deep_merge({"a": 1, "b": 2}, {"b": 3}) == {"a": 1, "b": 3}


    def test_nested_merge():
        base = {"db": {"host": "a", "port": 1}}
        assert deep_merge(base, {"db": {"port": 2}}) == {"db": {"host": "a", "port": 2}}
        assert base == {"db": {"host": "a", "port": 1}}


    def test_override_non_dict():
        assert deep_merge({"a": {"x": 1}}, {"a": 5}) == {"a": 5}
    ''')},
 ['tests/test_config.py::test_nested_merge'],
 ['tests/test_config.py::test_flat_merge', 'tests/test_config.py::test_override_non_dict'])

# ---------------- JavaScript ----------------
task('js-chunk-remainder', 'javascript', 'easy',
 'chunk([1, 2, 3, 4, 5], 2) returns [[1, 2], [3, 4]] and silently drops the 5. The last, shorter chunk must be kept: [[1, 2], [3, 4], [5]].',
 {'src/chunk.js': d('''
    'use strict';

    function chunk(items, size) {
      if (!Number.isInteger(size) || size < 1) throw new RangeError('size must be a positive integer');
      const chunks = [];
      for (let index = 0; index + size <= items.length; index += size) {
        chunks.push(items.slice(index, index + size));
      }
      return chunks;
    }

    module.exports = { chunk };
    ''')},
 {'src/chunk.js': d('''
    'use strict';

    function chunk(items, size) {
      if (!Number.isInteger(size) || size < 1) throw new RangeError('size must be a positive integer');
      const chunks = [];
      for (let index = 0; index < items.length; index += size) {
        chunks.push(items.slice(index, index + size));
      }
      return chunks;
    }

    module.exports = { chunk };
    ''')},
 {'test/chunk.test.js': d('''
    'use strict';
    const test = require('node:test');
    const assert = require('node:assert/strict');
    const { chunk } = require('../src/chunk.js');

    test('splits evenly', () => {
      assert.deepEqual(chunk([1, 2, 3, 4], 2), [[1, 2], [3, 4]]);
    });

    test('keeps the remainder', () => {
      assert.deepEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
    });

    test('rejects a bad size', () => {
      assert.throws(() => chunk([1], 0), RangeError);
    });
    ''')},
 ['test/chunk.test.js::keeps the remainder'],
 ['test/chunk.test.js::splits evenly', 'test/chunk.test.js::rejects a bad size'])

task('js-camel-case', 'javascript', 'easy',
 "toCamelCase('foo_bar-baz') returns 'foo_barBaz'; underscores and spaces must be treated as word separators like hyphens, giving 'fooBarBaz'.",
 {'src/case.js': d('''
    'use strict';

    function toCamelCase(text) {
      return text.toLowerCase().replace(/-([a-z0-9])/g, (_, letter) => letter.toUpperCase());
    }

    module.exports = { toCamelCase };
    ''')},
 {'src/case.js': d('''
    'use strict';

    function toCamelCase(text) {
      return text.toLowerCase().replace(/[-_\\s]+([a-z0-9])/g, (_, letter) => letter.toUpperCase());
    }

    module.exports = { toCamelCase };
    ''')},
 {'test/case.test.js': d('''
    'use strict';
    const test = require('node:test');
    const assert = require('node:assert/strict');
    const { toCamelCase } = require('../src/case.js');

    test('hyphens', () => {
      assert.equal(toCamelCase('foo-bar'), 'fooBar');
    });

    test('underscores and spaces', () => {
      assert.equal(toCamelCase('foo_bar-baz'), 'fooBarBaz');
      assert.equal(toCamelCase('hello big world'), 'helloBigWorld');
    });
    ''')},
 ['test/case.test.js::underscores and spaces'],
 ['test/case.test.js::hyphens'])

task('js-clamp-bounds', 'javascript', 'easy',
 'clamp(-5, 0, 10) returns 10 instead of 0, and clamp(15, 0, 10) returns 0 instead of 10. Values inside the range are returned unchanged and work today.',
 {'src/clamp.js': d('''
    'use strict';

    function clamp(value, min, max) {
      if (min > max) throw new RangeError('min must not exceed max');
      if (value < min) return max;
      if (value > max) return min;
      return value;
    }

    module.exports = { clamp };
    ''')},
 {'src/clamp.js': d('''
    'use strict';

    function clamp(value, min, max) {
      if (min > max) throw new RangeError('min must not exceed max');
      return Math.min(max, Math.max(min, value));
    }

    module.exports = { clamp };
    ''')},
 {'test/clamp.test.js': d('''
    'use strict';
    const test = require('node:test');
    const assert = require('node:assert/strict');
    const { clamp } = require('../src/clamp.js');

    test('inside the range', () => {
      assert.equal(clamp(5, 0, 10), 5);
    });

    test('below and above the range', () => {
      assert.equal(clamp(-5, 0, 10), 0);
      assert.equal(clamp(15, 0, 10), 10);
    });

    test('rejects inverted bounds', () => {
      assert.throws(() => clamp(1, 5, 0), RangeError);
    });
    ''')},
 ['test/clamp.test.js::below and above the range'],
 ['test/clamp.test.js::inside the range', 'test/clamp.test.js::rejects inverted bounds'])

task('js-parse-query', 'javascript', 'medium',
 "parseQuery('q=hello+world&lang=en%2Dgb') returns { q: 'hello+world', lang: 'en%2Dgb' }. Values and keys must be decoded like form data: '+' means a space and percent escapes are decoded, giving { q: 'hello world', lang: 'en-gb' }.",
 {'src/query.js': d('''
    'use strict';

    function parseQuery(query) {
      const result = {};
      const text = query.startsWith('?') ? query.slice(1) : query;
      for (const pair of text.split('&')) {
        if (!pair) continue;
        const index = pair.indexOf('=');
        const key = index < 0 ? pair : pair.slice(0, index);
        const value = index < 0 ? '' : pair.slice(index + 1);
        result[key] = value;
      }
      return result;
    }

    module.exports = { parseQuery };
    ''')},
 {'src/query.js': d('''
    'use strict';

    function decode(text) {
      return decodeURIComponent(text.replace(/\\+/g, ' '));
    }

    function parseQuery(query) {
      const result = {};
      const text = query.startsWith('?') ? query.slice(1) : query;
      for (const pair of text.split('&')) {
        if (!pair) continue;
        const index = pair.indexOf('=');
        const key = index < 0 ? pair : pair.slice(0, index);
        const value = index < 0 ? '' : pair.slice(index + 1);
        result[decode(key)] = decode(value);
      }
      return result;
    }

    module.exports = { parseQuery };
    ''')},
 {'test/query.test.js': d('''
    'use strict';
    const test = require('node:test');
    const assert = require('node:assert/strict');
    const { parseQuery } = require('../src/query.js');

    test('plain pairs', () => {
      assert.deepEqual(parseQuery('?a=1&b=2'), { a: '1', b: '2' });
    });

    test('decodes plus and percent escapes', () => {
      assert.deepEqual(parseQuery('q=hello+world&lang=en%2Dgb'), { q: 'hello world', lang: 'en-gb' });
    });

    test('flag without value', () => {
      assert.deepEqual(parseQuery('debug'), { debug: '' });
    });
    ''')},
 ['test/query.test.js::decodes plus and percent escapes'],
 ['test/query.test.js::plain pairs', 'test/query.test.js::flag without value'])

task('js-unique-by-first', 'javascript', 'medium',
 "uniqueBy(items, 'id') keeps the LAST item of each id and changes the order. It must keep the first occurrence of each key, in the original order.",
 {'src/unique.js': d('''
    'use strict';

    function uniqueBy(items, key) {
      const byKey = new Map();
      for (const item of items) byKey.set(item[key], item);
      return [...byKey.values()];
    }

    module.exports = { uniqueBy };
    ''')},
 {'src/unique.js': d('''
    'use strict';

    function uniqueBy(items, key) {
      const byKey = new Map();
      for (const item of items) if (!byKey.has(item[key])) byKey.set(item[key], item);
      return [...byKey.values()];
    }

    module.exports = { uniqueBy };
    ''')},
 {'test/unique.test.js': d('''
    'use strict';
    const test = require('node:test');
    const assert = require('node:assert/strict');
    const { uniqueBy } = require('../src/unique.js');

    test('no duplicates', () => {
      assert.deepEqual(uniqueBy([{ id: 1 }, { id: 2 }], 'id'), [{ id: 1 }, { id: 2 }]);
    });

    test('keeps the first occurrence', () => {
      const items = [{ id: 1, v: 'a' }, { id: 2, v: 'b' }, { id: 1, v: 'c' }];
      assert.deepEqual(uniqueBy(items, 'id'), [{ id: 1, v: 'a' }, { id: 2, v: 'b' }]);
    });
    ''')},
 ['test/unique.test.js::keeps the first occurrence'],
 ['test/unique.test.js::no duplicates'])

task('js-format-bytes', 'javascript', 'medium',
 "formatBytes(1024) returns '1024 B' and formatBytes(1048576) returns '1024.0 KB'; a value that reaches the next unit must move to it: '1.0 KB' and '1.0 MB'.",
 {'src/bytes.js': d('''
    'use strict';

    const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

    function formatBytes(bytes) {
      if (!Number.isFinite(bytes) || bytes < 0) throw new RangeError('bytes must be a non-negative number');
      let value = bytes;
      let unit = 0;
      while (value > 1024 && unit < UNITS.length - 1) {
        value /= 1024;
        unit += 1;
      }
      return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
    }

    module.exports = { formatBytes };
    ''')},
 {'src/bytes.js': d('''
    'use strict';

    const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

    function formatBytes(bytes) {
      if (!Number.isFinite(bytes) || bytes < 0) throw new RangeError('bytes must be a non-negative number');
      let value = bytes;
      let unit = 0;
      while (value >= 1024 && unit < UNITS.length - 1) {
        value /= 1024;
        unit += 1;
      }
      return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
    }

    module.exports = { formatBytes };
    ''')},
 {'test/bytes.test.js': d('''
    'use strict';
    const test = require('node:test');
    const assert = require('node:assert/strict');
    const { formatBytes } = require('../src/bytes.js');

    test('small values', () => {
      assert.equal(formatBytes(512), '512 B');
      assert.equal(formatBytes(1536), '1.5 KB');
    });

    test('exact unit boundaries', () => {
      assert.equal(formatBytes(1024), '1.0 KB');
      assert.equal(formatBytes(1048576), '1.0 MB');
    });
    ''')},
 ['test/bytes.test.js::exact unit boundaries'],
 ['test/bytes.test.js::small values'])

def write(root, files):
    for rel, content in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as handle:
            handle.write(content)

shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
for id, t in T.items():
    base = os.path.join(OUT, id)
    repo = os.path.join(base, 'repo')
    write(repo, t['buggy'])
    write(repo, t['tests'])
    if t['language'] == 'javascript':
        write(repo, {'package.json': json.dumps({'name': id, 'version': '1.0.0', 'private': True, 'scripts': {'test': 'node --test'}}, indent=2) + '\n'})
    else:
        write(repo, {'pytest.ini': '[pytest]\ntestpaths = tests\npythonpath = .\n'})
    # gold patch: git diff between buggy and fixed trees
    tmp_a = f'/tmp/swe-gen/{id}/a'; tmp_b = f'/tmp/swe-gen/{id}/b'
    shutil.rmtree(f'/tmp/swe-gen/{id}', ignore_errors=True)
    write(tmp_a, t['buggy']); write(tmp_b, t['fixed'])
    diff = subprocess.run(['git', 'diff', '--no-index', '--no-prefix', 'a', 'b'], cwd=f'/tmp/swe-gen/{id}', capture_output=True, text=True).stdout
    # rewrite "a/x" "b/x" headers into git's a/ b/ form relative to the repo root
    lines = []
    for line in diff.splitlines(keepends=True):
        if line.startswith('diff --git a/'):
            rel = line.split(' ')[2][2:]
            line = f'diff --git a/{rel} b/{rel}\n'
        elif line.startswith('--- a/'):
            line = '--- a/' + line[6:]
        elif line.startswith('+++ b/'):
            line = '+++ b/' + line[6:]
        lines.append(line)
    with open(os.path.join(base, 'gold.patch'), 'w') as handle:
        handle.write(''.join(lines))
    meta = {
        'id': id,
        'language': t['language'],
        'difficulty': t['difficulty'],
        'problem_statement': t['statement'],
        'FAIL_TO_PASS': t['f2p'],
        'PASS_TO_PASS': t['p2p'],
        'test_files': sorted(t['tests'].keys()),
    }
    if t['hints']: meta['hints'] = t['hints']
    with open(os.path.join(base, 'task.json'), 'w') as handle:
        handle.write(json.dumps(meta, indent=2) + '\n')
print(len(T), 'tasks')
