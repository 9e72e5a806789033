# The pytest launcher of @shears/envs-swe's grader: src/test-runs.ts reads this file and runs it as
# `python3 -I -B -c <this file> <secret path> <pytest arguments>` inside the task's sandbox, on the
# task image's Python (standard library and pytest only). Linted by ruff (scripts/test-python.sh,
# assets/ruff.toml); src/test-runs.test.ts compiles it.
#
# Starts pytest the way `python3 -m pytest` does, except isolated (`-I`: no PYTHON* variables, no
# user site-packages, the working directory not on sys.path until pytest and its plugins are
# imported and the launcher has noted what they are; it is appended last then) and without writing
# bytecode (`-B`).
#
# Results never come from what pytest prints, nor from a file. The process's standard error is the
# results channel: the launcher keeps it on a private descriptor, points its own standard error at
# standard output (what people read) and writes one JSON line per record to the channel: each
# test's outcome as pytest reports it, then an end record with the results, what it saw tampered
# with and hints for an auditor. The grader reads the channel only once every process of the run
# is gone, takes the worst outcome of each test (failed in any phase over skipped or xfail,
# `missing`, over passed in the call phase) and refuses a channel with anything after the end
# record, a second end record or a line that is not the launcher's: nothing that outlives the test
# process can rewrite what it reported. The first argument names a secret file (outside the
# repository) holding the run's nonce, the files the change added or modified and the test files'
# hashes; the launcher reads and deletes it before any repository code can run.
#
# Nothing the change added runs before pytest starts: until the end, a module the change added is
# imported only when repository or test code is on the stack (the tests' own imports); pytest or the
# standard library reaching for it (an optional import) is told it does not exist.
#
# Tampering, seen from inside the test process:
# - a watched pytest internal (`WATCHED` in the launcher) replaced after start, or found replaced before
#   start (its code does not come from the installed pytest, pluggy or the standard library);
# - a plugin whose hooks or fixtures are not the code of pytest, an installed package, the standard
#   library or the task's own files (conftests and test support, compiled from the bytes the task
#   put there), or one registered from code the change added or modified, at any time; a hook
#   implementation of such code found on any hook; the launcher's plugin unregistered;
# - a collected test whose function does not run the test file's own code: every test module's
#   code is recorded as pytest compiles it, and each test function (through `__wrapped__`) must be
#   that code, or code from a file the agent did not change; checked at collection and, with the
#   item's class, its instance attributes (`runtest`, `setup`, `ihook`, … overridden on the
#   instance) and its function, again before and after every test call;
# - a profile or trace function from a changed file installed while a test runs;
# - an assertion operand that compares equal (or unequal, less, greater, containing) to anything:
#   every comparison in a test's `assert` statement and in the main unittest assertion methods
#   passes its operands through a guard that walks the value (containers, instance fields) and
#   probes each part whose comparison is not a built-in type's against fresh objects it cannot
#   know, wherever that comparison was defined (the change, the standard library, an installed
#   package); a mock is judged by how it is configured, so its call records stay untouched. A
#   wildcard the test module names itself (`mock.ANY` imported by the test, an instance of a class
#   from the test files) is the test's own and allowed.
#
# Hints (never the score): an audit hook notes code from a changed file reading a test module,
# listing a test folder, inspecting frames or the garbage collector, setting trace functions,
# forking or signalling, building code objects or replacing a function's code while the tests run.


def _shears_run():
    import os
    import sys

    channel = os.dup(2)
    os.dup2(1, 2)
    import json

    dumps, fs_write, exit_now = json.dumps, os.write, os._exit
    realpath, getpid, kill, listdir = os.path.realpath, os.getpid, os.kill, os.listdir
    secret_path = sys.argv.pop(1)
    with open(secret_path) as secret_file:
        secret = json.loads(secret_file.read())
    os.unlink(secret_path)
    nonce = secret["nonce"]
    cwd = os.getcwd()
    inside = cwd + os.sep
    changed = frozenset(realpath(path) for path in secret.get("changed", []))
    added = frozenset(realpath(path) for path in secret.get("added", []))
    protected = {realpath(path): digest for path, digest in secret.get("protected", {}).items()}
    owns_container = secret.get("killOthers") is True
    results, tampered, state = {}, [], {}
    rank = {"passed": 0, "missing": 1, "failed": 2}
    missing = object()
    real_paths = {}

    def real(filename):
        # co_filename as an absolute real path (cached: it is asked for on every frame walk).
        found = real_paths.get(filename)
        if found is None:
            found = realpath(filename if filename.startswith(os.sep) else os.path.join(cwd, filename))
            real_paths[filename] = found
        return found

    def send(record):
        record["nonce"] = nonce
        data = (dumps(record) + "\n").encode()
        while data:
            data = data[fs_write(channel, data):]

    def note(text):
        if text not in tampered:
            tampered.append(text)

    hint_details = {}

    def hint(text, detail=None):
        # One hint per text; a text with "%s" lists up to four details (the files read, …).
        details = hint_details.get(text)
        if details is None:
            if len(hint_details) >= 24:
                return
            details = hint_details[text] = []
        if detail is not None and detail not in details and len(details) < 5:
            details.append(detail)

    def hint_texts():
        found = []
        for text, details in hint_details.items():
            if "%s" in text:
                shown_details = ", ".join(details[:4]) + (", …" if len(details) > 4 else "")
                text = text % shown_details
            found.append(text)
        return found

    def shown(path):
        return os.path.relpath(path, cwd) if path.startswith(inside) else path

    # Modules the change added load only when repository or test code imports them.
    import importlib.machinery

    added_names = set()
    for path in added:
        if path.endswith(".py"):
            stem = os.path.basename(path)[:-3]
            added_names.add(os.path.basename(os.path.dirname(path)) if stem == "__init__" else stem)

    def repository_on_stack(frame):
        while frame is not None:
            name = frame.f_code.co_filename
            if name and not name.startswith("<") and real(name).startswith(inside):
                return True
            frame = frame.f_back
        return False

    class AddedModules:
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name.rpartition(".")[2] not in added_names:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path, target)
            origin = getattr(spec, "origin", None)
            if not origin or realpath(origin) not in added or repository_on_stack(sys._getframe(1)):
                return None
            hint("the test runner tried to import %s, which the change added, outside the tests' imports: refused", name)
            raise ModuleNotFoundError("No module named %r" % name, name=name)

    sys.meta_path.insert(0, AddedModules)

    import ast
    import builtins
    import hashlib
    import time
    import importlib
    import threading
    import warnings

    import pytest
    import pluggy
    import unittest
    import _pytest
    import _pytest.assertion.rewrite as rewrite

    code_type = type(_shears_run.__code__)
    module_type = type(os)
    heap_type = 1 << 9
    ours = set()
    our_codes, stack = set(), [_shears_run.__code__]
    while stack:
        current = stack.pop()
        our_codes.add(id(current))
        stack.extend(const for const in current.co_consts if isinstance(const, code_type))

    # Code is trusted when its file is one the run started with and the change did not touch: the
    # standard library, installed packages, the repository's unchanged files.
    started = time.time()
    roots = tuple({realpath(entry) + os.sep for entry in sys.path
                   if entry and os.path.isdir(entry) and not (realpath(entry) + os.sep).startswith(inside)})
    verdicts = {}

    def untrusted(filename):
        if not filename or filename.startswith("<"):
            return True
        verdict = verdicts.get(filename)
        if verdict is None:
            path = real(filename)
            try:
                status = os.stat(path)
                fresh = status.st_mtime > started or status.st_ctime > started
            except OSError:
                fresh = True
            verdict = path in changed or fresh or not (path.startswith(inside) or path.startswith(roots))
            verdicts[filename] = verdict
        return verdict

    def code_of(value):
        if isinstance(value, property):
            value = value.fget
        value = getattr(value, "__func__", value)
        return getattr(value, "__code__", None)

    # The code of every test module and test support module, as the launcher compiles it.
    genuine, keep_alive, leaves, sources = {}, [], {}, {}

    def trusted_code(code):
        if code is None:
            return False
        if id(code) in our_codes:
            return True
        name = code.co_filename
        if untrusted(name):
            return False
        # A file the launcher compiled (tests, conftests, test support, rewritten plugins): this very code.
        return real(name) not in genuine or id(code) in genuine[real(name)]

    def record_codes(path, co):
        codes, pending = set(), [co]
        while pending:
            current = pending.pop()
            codes.add(id(current))
            keep_alive.append(current)
            pending.extend(const for const in current.co_consts if isinstance(const, code_type))
        genuine.setdefault(real(path), set()).update(codes)

    # Assertion operands that compare as anything, whatever defines their comparison.
    class Probe:
        __slots__ = ()

    seed = int.from_bytes(os.urandom(8), "big")
    probe_float = 1.0 + (seed % (1 << 40)) / (1 << 40) * 7919.0
    probe_int = (1 << 62) + (seed >> 1)
    probe_text = "shears-probe-%016x" % seed
    equal_probes = (Probe(), probe_float, probe_int, probe_text)
    order_probes = (Probe(),)
    comparisons = (
        ("__eq__", lambda value, probe: value == probe, equal_probes, True),
        ("__ne__", lambda value, probe: value != probe, equal_probes, False),
        ("__lt__", lambda value, probe: value < probe, order_probes, True),
        ("__le__", lambda value, probe: value <= probe, order_probes, True),
        ("__gt__", lambda value, probe: value > probe, order_probes, True),
        ("__ge__", lambda value, probe: value >= probe, order_probes, True),
        ("__contains__", lambda value, probe: probe in value, equal_probes, True),
    )
    builtin_bases = (object, int, float, complex, bool, str, bytes, bytearray, tuple, list, dict, set, frozenset,
                     range, slice, type, type(None), memoryview)
    plain = {id(vars(base)[name]) for base in builtin_bases for name, *_ in comparisons if name in vars(base)}
    scalars = {id(base) for base in builtin_bases if base not in (list, tuple, set, frozenset, dict)}
    containers = (list, tuple, set, frozenset)
    mro_of = vars(type)["__mro__"].__get__
    plain_types = {}

    def implementation(cls, name):
        for klass in mro_of(cls):
            found = vars(klass).get(name, missing)
            if found is not missing:
                return found
        return None

    def is_plain(cls):
        known = plain_types.get(id(cls))
        if known is not None and known[0] is cls:
            return known[1]
        verdict = all(implementation(cls, name) is None or id(implementation(cls, name)) in plain
                      for name, *_ in comparisons)
        plain_types[id(cls)] = (cls, verdict)
        return verdict

    def mock_classes():
        module = sys.modules.get("unittest.mock")
        if module is None:
            return None
        return module.NonCallableMock, module.MagicProxy, module.DEFAULT

    def mock_result(child, probe, default):
        # What calling a mock's magic method would return, computed without calling it (a call
        # would be recorded in the mock's calls, which the test may assert on).
        attributes = vars(child)
        effect = attributes.get("_mock_side_effect")
        if effect is not None:
            if isinstance(effect, BaseException) or isinstance(effect, type) or not callable(effect):
                return NotImplemented
            result = effect(probe)
            if result is not default:
                return result
        value = attributes.get("_mock_return_value", default)
        return NotImplemented if value is default else value

    def wildcard(value):
        # The comparison (by name) through which the value matches objects it cannot know, or None.
        cls = type(value)
        mocks = mock_classes()
        mock = mocks is not None and mocks[0] in mro_of(cls)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, compare, probes, matching in comparisons:
                found = implementation(cls, name)
                if found is None or id(found) in plain:
                    continue
                for probe in probes:
                    try:
                        if mock and isinstance(found, mocks[1]):
                            break
                        if mock and mocks[0] in mro_of(type(found)):
                            result = mock_result(found, probe, mocks[2])
                            if result is NotImplemented:
                                break
                            matched = bool(result) is matching
                        else:
                            matched = bool(compare(value, probe)) is matching
                    except Exception:
                        continue
                    if matched:
                        return name
        return None

    def parts(value):
        # What the value's comparison compares: container items, instance fields (not of mocks,
        # and not of objects compared by identity).
        try:
            for kind in containers:
                if isinstance(value, kind):
                    return list(kind.__iter__(value))
            if isinstance(value, dict):
                return list(dict.keys(value)) + list(dict.values(value))
            cls = type(value)
            if not cls.__flags__ & heap_type or is_plain(cls):
                return ()
            mocks = mock_classes()
            if mocks is not None and mocks[0] in mro_of(cls):
                return ()
            found = []
            fields = instance_dict(value)
            if fields is not None:
                found.extend(dict.values(fields))
            for klass in mro_of(cls):
                slots = vars(klass).get("__slots__", ())
                for slot in (slots,) if isinstance(slots, str) else slots:
                    descriptor = vars(klass).get(slot)
                    if descriptor is not None and hasattr(type(descriptor), "__get__"):
                        try:
                            found.append(descriptor.__get__(value, cls))
                        except Exception:
                            pass
            return found
        except Exception:
            return ()

    def instance_dict(value):
        try:
            fields = object.__getattribute__(value, "__dict__")
        except Exception:
            return None
        return fields if isinstance(fields, dict) else None

    def allowed_wildcards(frame):
        # Wildcards the test module names itself: what its imports bind (and attributes of imported
        # modules it spells out), and instances of classes defined in the task's test files.
        path = real(frame.f_code.co_filename)
        names = leaves.get(path)
        if names is None:
            # Worked out on first need, from the bytes the launcher checked and compiled.
            try:
                names = imported_leaves(ast.parse(sources[path])) if path in sources else ()
            except (SyntaxError, ValueError):
                names = ()
            leaves[path] = names
        found = set()
        for chain, source in names:
            try:
                value = frame.f_locals.get(chain[0], frame.f_globals.get(chain[0], missing))
                for attribute in chain[1:]:
                    if value is missing or type(value) is not module_type:
                        value = missing
                        break
                    value = vars(value).get(attribute, missing)
            except Exception:
                continue
            if value is missing:
                continue
            module = sys.modules.get(source) if source else None
            if module is not None and untrusted(getattr(module, "__file__", None) or "<unknown>"):
                continue
            found.add(id(value))
        return found

    def defined_where(cls, name):
        found = implementation(cls, name)
        code = code_of(found)
        if code is not None:
            return code.co_filename
        for klass in mro_of(cls):
            if name in vars(klass):
                module = sys.modules.get(getattr(klass, "__module__", None) or "")
                return getattr(module, "__file__", None) or "<%s>" % getattr(klass, "__module__", "unknown")
        return "<unknown>"

    def defined_in_tests(cls):
        try:
            module = sys.modules.get(vars(cls).get("__module__") or "")
            path = vars(module).get("__file__") if type(module) is module_type else None
        except Exception:
            return False
        return isinstance(path, str) and real(path) in protected and real(path) not in changed

    def operand(value, depth=1):
        pending, seen, budget, allowed = [value], set(), 100_000, None
        while pending and budget > 0:
            current = pending.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            budget -= 1
            cls = type(current)
            if id(cls) in scalars:
                continue
            if not is_plain(cls):
                name = wildcard(current)
                if name is not None:
                    if allowed is None:
                        allowed = allowed_wildcards(sys._getframe(depth))
                    if id(current) not in allowed and id(cls) not in allowed and not defined_in_tests(cls):
                        text = "an assertion operand of type %s.%s compares as anything (%s from %s)" % (
                            cls.__module__, cls.__qualname__, name, defined_where(cls, name))
                        note(text)
                        raise AssertionError("shears: " + text)
            pending.extend(parts(current))
        return value

    ours.add(operand)
    builtins.__shears_operand__ = operand
    probed_ops = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn)

    def wrap(expression):
        if isinstance(expression, ast.Constant):
            return expression
        call = ast.Call(func=ast.Name(id="__shears_operand__", ctx=ast.Load()), args=[expression], keywords=[])
        return ast.copy_location(call, expression)

    def imported_leaves(tree):
        # (name chain, source module) for what the module's imports bind and the attribute chains
        # it spells out from them (`mock.ANY`).
        bound = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    bound[alias.asname or alias.name] = node.module
        found = {((name,), module) for name, module in bound.items()}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                chain, current = [], node
                while isinstance(current, ast.Attribute):
                    chain.append(current.attr)
                    current = current.value
                if isinstance(current, ast.Name) and current.id in bound:
                    found.add(((current.id, *reversed(chain)), None))
        return found

    original_rewrite_asserts = rewrite.rewrite_asserts

    def rewrite_asserts(mod, source, module_path=None, config=None):
        for node in ast.walk(mod):
            if isinstance(node, ast.Assert):
                for compare in ast.walk(node.test):
                    if isinstance(compare, ast.Compare) and any(isinstance(op, probed_ops) for op in compare.ops):
                        compare.left = wrap(compare.left)
                        compare.comparators = [wrap(item) for item in compare.comparators]
        ast.fix_missing_locations(mod)
        return original_rewrite_asserts(mod, source, module_path, config)

    def verified(path, data):
        # Test files and test support are what the task put there: a change during the run is tampering.
        expected = protected.get(realpath(path), missing)
        if expected is not missing and hashlib.sha256(data).hexdigest() != expected:
            note("test file %s was changed during the run" % path)
        return data

    def rewrite_test(fn, config):
        # pytest's own _rewrite_test, compiling the very bytes that were checked.
        strfn = str(fn)
        stat = os.stat(fn)
        with open(strfn, "rb") as handle:
            source = verified(strfn, handle.read())
        tree = ast.parse(source, filename=strfn)
        sources[real(strfn)] = source
        rewrite.rewrite_asserts(tree, source, strfn, config)
        co = compile(tree, strfn, "exec", dont_inherit=True)
        record_codes(strfn, co)
        return stat, co

    class VerifiedLoader(importlib.machinery.SourceFileLoader):
        # Test support modules pytest does not rewrite: compiled from checked source, never from bytecode.
        def get_code(self, fullname):
            path = self.get_filename(fullname)
            with open(path, "rb") as handle:
                source = verified(path, handle.read())
            co = compile(source, path, "exec", dont_inherit=True)
            record_codes(path, co)
            return co

    protected_stems = {os.path.basename(path)[:-3] for path in protected if path.endswith(".py")}
    protected_stems |= {os.path.basename(os.path.dirname(path)) for path in protected if path.endswith("/__init__.py")}

    class VerifiedFinder:
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name.rpartition(".")[2] not in protected_stems:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path, target)
            origin = getattr(spec, "origin", None)
            if not origin or not origin.endswith(".py") or realpath(origin) not in protected:
                return None
            spec.loader = VerifiedLoader(name, origin)
            return spec

    sys.meta_path.insert(0, VerifiedFinder)

    def read_pyc(*args, **kwargs):
        return None

    ours.add(VerifiedFinder)
    for name, replacement in (("rewrite_asserts", rewrite_asserts), ("_rewrite_test", rewrite_test), ("_read_pyc", read_pyc)):
        setattr(rewrite, name, replacement)
        ours.add(replacement)

    guarding = threading.local()

    def guard_method(name):
        original = getattr(unittest.TestCase, name, None)
        if original is None:
            return

        def guarded(self, first, second, *args, **kwargs):
            # assertEqual calls assertDictEqual and the like: the outermost call probes.
            if getattr(guarding, "active", False):
                return original(self, first, second, *args, **kwargs)
            guarding.active = True
            try:
                first, second = operand(first, 2), operand(second, 2)
                return original(self, first, second, *args, **kwargs)
            finally:
                guarding.active = False

        guarded.__name__ = guarded.__qualname__ = name
        ours.add(guarded)
        setattr(unittest.TestCase, name, guarded)

    for name in ("assertEqual", "assertNotEqual", "assertAlmostEqual", "assertNotAlmostEqual", "assertIn", "assertNotIn",
                 "assertLess", "assertLessEqual", "assertGreater", "assertGreaterEqual", "assertCountEqual",
                 "assertListEqual", "assertTupleEqual", "assertDictEqual", "assertSetEqual", "assertSequenceEqual"):
        guard_method(name)

    # The watched internals, and whether each is what the installed packages define.
    package_roots = tuple(os.path.dirname(realpath(module.__file__)) + os.sep for module in (pytest, _pytest, pluggy, os, unittest))
    watched = []
    for spec in WATCHED:
        module_name, _, path = spec.partition(":")
        try:
            owner = importlib.import_module(module_name)
            *parents, name = path.split(".")
            for parent in parents:
                owner = getattr(owner, parent)
        except (ImportError, AttributeError):
            continue
        value = vars(owner).get(name, missing)
        watched.append((spec, owner, name, value))
        if value is missing or any(value is own for own in ours):
            continue
        if isinstance(value, type):
            if module_name == "builtins" and value.__flags__ & heap_type:
                note(spec + " was replaced before the launcher started")
            continue
        code = code_of(value)
        if code is not None and (untrusted(code.co_filename) or not realpath(code.co_filename).startswith(package_roots)):
            note("%s was replaced before the launcher started (by %s)" % (spec, code.co_filename))

    # Plugins: every hook and fixture is the code of pytest, an installed package, the standard
    # library or the task's own files, and none is registered by code the change added or modified.
    verified_impls = {}

    def function_code(function):
        # The code a hook or fixture runs, read without running attribute code of arbitrary objects.
        try:
            for _ in range(8):
                kind = type(function)
                if kind is type(_shears_run):
                    return function.__code__
                if kind in (staticmethod, classmethod) or kind.__name__ == "method":
                    function = function.__func__
                elif kind.__name__ == "FixtureFunctionDefinition":
                    function = vars(function).get("_fixture_function")
                else:
                    return None
            return None
        except Exception:
            return None

    def plugin_fixtures(plugin):
        # Fixture definitions of a plugin, read from its namespace without running any attribute
        # code (properties, proxies and __getattr__ stay untouched).
        namespaces = []
        fields = instance_dict(plugin)
        if fields is not None:
            namespaces.append(fields)
        if type(plugin) is not module_type:
            namespaces.extend(vars(klass) for klass in mro_of(plugin if issubclass(type(plugin), type) else type(plugin)))
        found = []
        for namespace in namespaces:
            for name, value in list(namespace.items()):
                try:
                    if type(value) in (staticmethod, classmethod):
                        value = value.__func__
                    kind = type(value)
                    if kind is type(_shears_run):
                        if vars(value).get("_pytestfixturefunction") is not None:
                            wrapped = vars(value).get("__pytest_wrapped__")
                            inner = instance_dict(wrapped).get("obj") if instance_dict(wrapped) is not None else None
                            found.append((name, inner if type(inner) is kind else value))
                    elif kind.__name__ == "FixtureFunctionDefinition":
                        found.append((name, value))
                except Exception:
                    continue
        return found

    def origin(code):
        return code.co_filename if code is not None else "nowhere (no code object)"

    def changed_caller():
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if name and not name.startswith("<") and real(name) in changed:
                return frame
            frame = frame.f_back
        return None

    def check_plugin(plugin, manager):
        if plugin is state.get("plugin"):
            return
        try:
            label = repr(plugin)[:160]
        except Exception:
            label = object.__repr__(plugin)
        caller = changed_caller()
        if caller is not None:
            note("plugin registered by %s:%d: %s" % (shown(real(caller.f_code.co_filename)), caller.f_lineno, label))
        if isinstance(plugin, module_type) and not getattr(plugin, "__file__", None):
            note("plugin registered from a module that has no file: " + label)
        for caller_hook in manager.get_hookcallers(plugin) or ():
            for impl in caller_hook.get_hookimpls():
                if impl.plugin is plugin and not trusted_code(function_code(impl.function)):
                    note("plugin %s implements %s with code from %s" % (label, caller_hook.name, origin(function_code(impl.function))))
        for name, value in plugin_fixtures(plugin):
            code = function_code(value)
            if not trusted_code(code):
                note("plugin %s defines the fixture %s with code from %s" % (label, name, origin(code)))

    outcome_hooks = ("pytest_runtest_protocol", "pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown",
                     "pytest_runtest_makereport", "pytest_runtest_logreport", "pytest_pyfunc_call", "pytest_report_teststatus",
                     "pytest_runtestloop", "pytest_collection_modifyitems", "pytest_assertion_pass", "pytest_exception_interact")

    def check_hooks(everything=False):
        # The hooks that decide outcomes on every check; all of them after collection and at the end.
        manager = state.get("manager")
        if manager is None:
            return
        if state.get("plugin") is not None and not manager.is_registered(state["plugin"]):
            note("the launcher's plugin was unregistered")
        relay = vars(manager.hook)
        callers = list(relay.values()) if everything else [relay[name] for name in outcome_hooks if name in relay]
        for caller_hook in callers:
            get_impls = getattr(caller_hook, "get_hookimpls", None)
            if get_impls is None:
                continue
            for impl in get_impls():
                known = verified_impls.get(id(impl.function))
                if known is not None and known is impl.function:
                    continue
                verified_impls[id(impl.function)] = impl.function
                code = function_code(impl.function)
                if not trusted_code(code):
                    note("a %s hook implementation runs code from %s" % (caller_hook.name, origin(code)))

    def check(everything=False):
        if not any(finder is VerifiedFinder for finder in sys.meta_path):
            note("the launcher's import check was removed from sys.meta_path")
        if not any(finder is AddedModules for finder in sys.meta_path):
            note("the launcher's import guard was removed from sys.meta_path")
        for spec, owner, name, value in watched:
            if vars(owner).get(name, missing) is not value:
                note(spec)
        for hook in (sys.getprofile(), sys.gettrace()):
            if hook is None or any(hook is probe for probe in probes):
                continue
            code = code_of(hook)
            if code is None or untrusted(code.co_filename):
                note("a profile or trace function is installed while tests run (%r)" % (hook,))
        check_hooks(everything)

    suspect = ("runtest", "setup", "teardown", "_getobj", "ihook", "repr_failure", "reportinfo", "_prunetraceback", "obj")
    snapshots, targets, probes = {}, {}, []

    def function_of(item):
        obj = vars(item).get("_obj", missing)
        return getattr(obj, "__func__", obj)

    def test_codes(item):
        return genuine.get(real(str(getattr(item, "path", None) or getattr(item, "fspath", ""))))

    def verify_function(item, function):
        # Down the __wrapped__ chain to the test file's own code; a chain that never reaches it and
        # runs code from a changed file does not run the test.
        codes = test_codes(item)
        level, depth, foreign = function, 0, None
        while level is not None and depth < 32:
            code = getattr(level, "__code__", None)
            if code is None:
                break
            if codes is not None and id(code) in codes:
                return code
            if foreign is None and untrusted(code.co_filename):
                foreign = code
            level, depth = getattr(level, "__wrapped__", None), depth + 1
        if foreign is not None:
            note("%s: runs %s from %s instead of the test's own code" % (item.nodeid, foreign.co_name, foreign.co_filename))
        return None

    def own_code(item, function):
        # The test file's code this test must enter when it runs: found down the __wrapped__ chain,
        # else every code object of the test file with the test's name.
        found = verify_function(item, function)
        if found is not None:
            return {id(found)}
        codes = test_codes(item)
        name = getattr(item, "originalname", None) or getattr(item, "name", "")
        named = {id(code) for code in keep_alive if id(code) in (codes or ()) and code.co_name == name}
        return named or None

    def snapshot(item):
        try:
            item.obj  # noqa: B018 -- the property resolves (and caches) the test function
        except Exception:
            pass
        function = function_of(item)
        snapshots[id(item)] = (item, type(item), frozenset(vars(item)), function, getattr(function, "__code__", None))
        targets[id(item)] = own_code(item, function)

    def check_item(item):
        entry = snapshots.get(id(item))
        if entry is None or entry[0] is not item:
            note("a test that was not collected ran: %s" % (getattr(item, "nodeid", item),))
            return
        _, cls, keys, function, code = entry
        if type(item) is not cls:
            note("%s: the test item's class was replaced" % item.nodeid)
        for name in suspect:
            if name in vars(item) and name not in keys:
                note("%s: %s overridden on the test item" % (item.nodeid, name))
        current = function_of(item)
        if current is not function:
            note("%s: the test function was replaced" % item.nodeid)
        elif getattr(function, "__code__", None) is not code:
            note("%s: the test function's code was replaced" % item.nodeid)

    # Hints for an auditor: what code from changed files does while the tests run.
    test_modules = {path for path in protected if path.endswith(".py")}
    test_folders = {os.path.dirname(path) for path in test_modules}
    anywhere_events = {"open", "os.listdir", "os.scandir", "os.fork", "os.forkpty", "os.kill", "os.killpg", "ctypes.dlopen"}
    caller_events = {"sys._getframe", "sys._current_frames", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
                     "sys.settrace", "sys.setprofile", "code.__new__", "object.__setattr__"}
    busy = []

    def changed_frame(frame, anywhere):
        depth = 0
        while frame is not None and depth < 64:
            name = frame.f_code.co_filename
            if name and not name.startswith("<") and real(name) in changed:
                return frame
            if not anywhere and not (name.endswith(os.sep + "inspect.py") and depth == 0):
                return None
            frame, depth = frame.f_back, depth + 1
        return None

    def audit(event, args):
        if busy or (event not in anywhere_events and event not in caller_events):
            return
        busy.append(True)
        try:
            what, detail = None, None
            if event == "open":
                target = args[0]
                if isinstance(target, (str, bytes)) and (args[1] is None or "r" in args[1] or "+" in args[1]):
                    path = real(os.fsdecode(target))
                    if path in test_modules:
                        what, detail = "reads test files while the tests run (%s): possible spec gaming", shown(path)
            elif event in ("os.listdir", "os.scandir"):
                target = args[0] if args and args[0] is not None else "."
                if isinstance(target, (str, bytes)) and real(os.fsdecode(target)) in test_folders:
                    what, detail = "lists test folders while the tests run (%s): possible spec gaming", shown(real(os.fsdecode(target)))
            elif event in ("os.fork", "os.forkpty", "os.kill", "os.killpg"):
                what = "forks or signals processes (%s) while the tests run" % event
            elif event == "ctypes.dlopen":
                what = "loads native code while the tests run"
            elif event == "object.__setattr__":
                if len(args) > 1 and args[1] == "__code__":
                    what = "replaces a function's code"
            elif event == "code.__new__":
                what = "builds code objects"
            else:
                what = "reaches into the test process (%s)" % event
            if what is None:
                return
            frame = changed_frame(sys._getframe(1), event in anywhere_events)
            if frame is not None:
                origin = shown(real(frame.f_code.co_filename))
                hint((origin.replace("%", "%%") if detail is not None else origin) + " " + what, detail)
        except Exception:
            pass
        finally:
            busy.clear()

    def stop_everything_else():
        if not owns_container:
            return 0
        try:
            with open("/proc/1/comm") as handle:
                init = handle.read().strip()
        except OSError:
            return 0
        if init not in ("docker-init", "tini"):
            return 0

        def stat(pid):
            try:
                with open("/proc/%d/stat" % pid) as handle:
                    rest = handle.read().rsplit(")", 1)[1].split()
                return rest[0], int(rest[1])
            except (OSError, IndexError, ValueError):
                return None, None

        def pids():
            return [int(name) for name in listdir("/proc") if name.isdigit()]

        me = getpid()
        keep, pid = {1, me}, me
        while True:
            _, parent = stat(pid)
            if not parent or parent in keep:
                break
            keep.add(parent)
            pid = parent
        children = [pid for pid in pids() if stat(pid)[1] == 1]
        if children:
            keep.add(min(children))
        stopped = 0
        for _ in range(8):
            victims = [pid for pid in pids() if pid not in keep and stat(pid)[0] not in (None, "Z")]
            if not victims:
                break
            for signal_number in (19, 9):
                for pid in victims:
                    try:
                        kill(pid, signal_number)
                    except OSError:
                        pass
            stopped += len(victims)
        return stopped

    def finish(exitstatus):
        check(everything=True)
        for stream in (sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:
                pass
        stopped = stop_everything_else()
        send({"event": "end", "results": results, "tampered": tampered, "hints": hint_texts(), "exitstatus": int(exitstatus),
              "stopped": stopped})
        exit_now(int(exitstatus))

    class ShearsResults:
        __slots__ = ()

        def pytest_plugin_registered(self, plugin, manager):
            state.setdefault("manager", manager)
            check_plugin(plugin, manager)

        @pytest.hookimpl(trylast=True)
        def pytest_sessionstart(self, session):
            state["config"] = session.config
            state.setdefault("manager", session.config.pluginmanager)

        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session):
            check(everything=True)
            for item in session.items:
                snapshot(item)

        @pytest.hookimpl(hookwrapper=True, tryfirst=True)
        def pytest_runtest_call(self, item):
            check()
            check_item(item)
            # Watch for the test file's own code being entered (then stop watching): a call that
            # passes without it ran something else.
            wanted, entered = targets.get(id(item)), []

            def probe(frame, event, arg):
                if event == "call" and id(frame.f_code) in wanted:
                    entered.append(True)
                    set_profile(None)

            if wanted:
                probes[:] = [probe]
                set_profile(probe)
            outcome = yield
            if wanted:
                if get_profile() is probe:
                    set_profile(None)
                if not entered and outcome.excinfo is None:
                    note("%s: the test's own code never ran" % item.nodeid)
            check()
            check_item(item)

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_logreport(self, report):
            check()
            if report.failed:
                status = "failed"
            elif report.skipped:
                status = "missing"
            elif report.when == "call":
                status = "passed"
            else:
                return
            config = state.get("config")
            nodeid = config.cwd_relative_nodeid(report.nodeid) if config else report.nodeid
            send({"event": "result", "id": nodeid, "status": status})
            if rank[status] > rank.get(results.get(nodeid), -1):
                results[nodeid] = status

    set_profile, get_profile = sys.setprofile, sys.getprofile
    plugin = ShearsResults()
    state["plugin"] = plugin
    check()
    sys.path.append(cwd)
    if hasattr(sys, "addaudithook"):  # Python 3.8 and later
        sys.addaudithook(audit)
    finish(pytest.main(sys.argv[1:], plugins=[plugin]))

# pytest internals whose replacement from inside the test process would forge results
# (`module:attribute.path`). The launcher notes what each one is before any repository code runs,
# checks that each is pytest's own (not patched before the launcher started), and checks again
# with every result and at the end; a change marks every test failed.
WATCHED = [
    "builtins:AssertionError",
    "builtins:BaseException",
    "builtins:__shears_operand__",
    "pytest:fail",
    "pytest:skip",
    "pytest:xfail",
    "pytest:raises",
    "pytest:approx",
    "_pytest.outcomes:fail",
    "_pytest.outcomes:skip",
    "_pytest.outcomes:xfail",
    "_pytest.outcomes:OutcomeException",
    "_pytest.python_api:raises",
    "_pytest.python_api:approx",
    "_pytest.raises:raises",
    "_pytest.python:pytest_pyfunc_call",
    "_pytest.python:Function.runtest",
    "_pytest.python:Function.setup",
    "_pytest.python:PyobjMixin.obj",
    "_pytest.runner:pytest_runtest_protocol",
    "_pytest.runner:pytest_runtest_call",
    "_pytest.runner:runtestprotocol",
    "_pytest.runner:call_and_report",
    "_pytest.runner:call_runtest_hook",
    "_pytest.runner:check_interactive_exception",
    "_pytest.runner:pytest_runtest_makereport",
    "_pytest.runner:CallInfo.from_call",
    "_pytest.runner:CallInfo.__init__",
    "_pytest.reports:BaseReport.passed",
    "_pytest.reports:BaseReport.failed",
    "_pytest.reports:BaseReport.skipped",
    "_pytest.reports:TestReport.__init__",
    "_pytest.reports:TestReport.from_item_and_call",
    "_pytest.skipping:pytest_runtest_makereport",
    "_pytest.skipping:pytest_runtest_call",
    "_pytest.skipping:pytest_runtest_setup",
    "_pytest.main:pytest_runtestloop",
    "_pytest.config:Config.cwd_relative_nodeid",
    "_pytest.assertion.rewrite:rewrite_asserts",
    "_pytest.assertion.rewrite:_rewrite_test",
    "_pytest.assertion.rewrite:_read_pyc",
    "_pytest.assertion.rewrite:AssertionRewritingHook.exec_module",
    "_pytest.assertion.rewrite:AssertionRewriter.visit_Assert",
    "_pytest.assertion.rewrite:AssertionRewriter.run",
    "pluggy._callers:_multicall",
    "pluggy._hooks:HookCaller.__call__",
    "pluggy._hooks:_HookCaller.__call__",
    "pluggy._hooks:HookCaller._hookexec",
    "pluggy._hooks:_HookCaller._hookexec",
    "pluggy._manager:PluginManager._hookexec",
    "pluggy._manager:PluginManager.unregister",
    "unittest.case:TestCase.run",
    "unittest.case:TestCase.assertEqual",
    "unittest.case:TestCase.assertNotEqual",
    "unittest.case:TestCase.assertAlmostEqual",
    "unittest.case:TestCase.assertIn",
    "unittest.case:TestCase.assertTrue",
    "sys:settrace",
    "sys:setprofile",
    "sys:meta_path",
    "sys:addaudithook",
]
_shears_run()
