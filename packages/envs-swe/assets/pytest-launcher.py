# The pytest launcher of @shears/envs-swe's grader: src/test-runs.ts reads this file and runs it as
# `python3 -I -B -c <this file> <secret path> <pytest arguments>` inside the task's sandbox, on the
# task image's Python (standard library and pytest only). Linted by ruff (scripts/test-python.sh,
# assets/ruff.toml); src/test-runs.test.ts compiles it.
#
# Starts pytest the way `python3 -m pytest` does, except isolated (`-I`: no PYTHON* variables, no
# user site-packages, the working directory not on sys.path until the launcher appends it last,
# so the installed pytest, its plugins and the standard library win over planted modules) and
# without writing bytecode (`-B`).
#
# Results never come from what pytest prints. The first argument names a secret file (outside the
# repository) holding the run's nonce, the report path and the files the agent changed; the
# launcher reads and deletes it before any repository code runs, and runs pytest with an in-memory
# plugin that records each test's worst outcome (failed in any phase over skipped or xfail,
# `missing`, over passed in the call phase). When pytest returns, it stops every
# other process of the container (when the grader owns it), writes results, nonce and any tampering
# it saw to the report file and exits at once: a run that exits early leaves no report, a report
# without the nonce is forged, and nothing it started is alive to rewrite the report.
#
# Tampering, seen from inside the test process:
# - a watched pytest internal (`WATCHED` in the launcher) replaced after start, or found replaced before
#   start (its code does not come from the installed pytest, pluggy or the standard library);
# - a plugin registered after the session started that is neither a conftest nor a module from
#   outside the repository;
# - a collected test whose function does not run the test file's own code: every test module's
#   code is recorded as pytest compiles it, and each test function (through `__wrapped__`) must be
#   that code, or code from a file the agent did not change; checked at collection and, with the
#   item's class, its instance attributes (`runtest`, `setup`, `ihook`, … overridden on the
#   instance) and its function, again before and after every test call;
# - a profile or trace function from a changed file installed while a test runs;
# - an assertion operand from a changed file that compares equal (or unequal, less, greater,
#   containing) to anything: every comparison in a test's `assert` statement and in the main
#   unittest assertion methods passes its operands through a guard that probes them against a
#   fresh object, when the comparison is implemented by code from a changed file.


def _shears_run():
    import ast, builtins, hashlib, importlib, importlib.machinery, json, os, sys
    dumps, fs_open, fs_write, fs_close, fs_unlink = json.dumps, os.open, os.write, os.close, os.unlink
    realpath, getpid, kill, listdir, exit_now = os.path.realpath, os.getpid, os.kill, os.listdir, os._exit
    set_profile, get_profile = sys.setprofile, sys.getprofile
    secret_path = sys.argv.pop(1)
    with open(secret_path) as secret_file:
        secret = json.loads(secret_file.read())
    fs_unlink(secret_path)
    nonce, report_path = secret["nonce"], secret["report"]
    changed = frozenset(realpath(path) for path in secret.get("changed", []))
    protected = {realpath(path): digest for path, digest in secret.get("protected", {}).items()}
    owns_container = secret.get("killOthers") is True
    cwd = os.getcwd()
    sys.path.append(cwd)
    import pytest
    import pluggy
    import unittest
    import _pytest
    import _pytest.assertion.rewrite as rewrite
    code_type = type(_shears_run.__code__)
    heap_type = 1 << 9
    missing = object()
    results, tampered, state = {}, [], {}
    rank = {"passed": 0, "missing": 1, "failed": 2}
    ours = set()

    def note(text):
        if text not in tampered:
            tampered.append(text)

    def untrusted(filename):
        return not filename or filename.startswith("<") or realpath(filename) in changed

    def code_of(value):
        if isinstance(value, property):
            value = value.fget
        value = getattr(value, "__func__", value)
        return getattr(value, "__code__", None)

    # Assertion operands that compare as anything.
    class Probe:
        __slots__ = ()

    comparisons = (
        ("__eq__", lambda value, probe: value == probe),
        ("__ne__", lambda value, probe: not (value != probe)),
        ("__lt__", lambda value, probe: value < probe),
        ("__le__", lambda value, probe: value <= probe),
        ("__gt__", lambda value, probe: value > probe),
        ("__ge__", lambda value, probe: value >= probe),
        ("__contains__", lambda value, probe: probe in value),
    )

    def implementation(cls, name):
        for klass in cls.__mro__:
            if name in vars(klass):
                if not klass.__flags__ & heap_type:
                    return None
                code = code_of(vars(klass)[name])
                if code is not None:
                    return code.co_filename
                module = sys.modules.get(klass.__module__)
                return getattr(module, "__file__", None) or "<unknown>"
        return None

    def operand(value):
        cls = type(value)
        if not cls.__flags__ & heap_type:
            return value
        for name, compare in comparisons:
            filename = implementation(cls, name)
            if filename is None or not untrusted(filename):
                continue
            try:
                matched = bool(compare(value, Probe()))
            except Exception:
                continue
            if matched:
                text = "a value of type %s compares as anything (%s from %s)" % (cls.__qualname__, name, filename)
                note(text)
                raise AssertionError("shears: " + text)
        return value

    ours.add(operand)
    builtins.__shears_operand__ = operand

    def wrap(expression):
        if isinstance(expression, ast.Constant):
            return expression
        call = ast.Call(func=ast.Name(id="__shears_operand__", ctx=ast.Load()), args=[expression], keywords=[])
        return ast.copy_location(call, expression)

    original_rewrite_asserts = rewrite.rewrite_asserts

    def rewrite_asserts(mod, source, module_path=None, config=None):
        for node in ast.walk(mod):
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
                node.test.left = wrap(node.test.left)
                node.test.comparators = [wrap(item) for item in node.test.comparators]
        ast.fix_missing_locations(mod)
        return original_rewrite_asserts(mod, source, module_path, config)

    # The code of every test module, as pytest compiles it (no cached bytecode is read).
    genuine, keep_alive = {}, []

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
        rewrite.rewrite_asserts(tree, source, strfn, config)
        co = compile(tree, strfn, "exec", dont_inherit=True)
        codes, stack = set(), [co]
        while stack:
            current = stack.pop()
            codes.add(id(current))
            keep_alive.append(current)
            stack.extend(const for const in current.co_consts if isinstance(const, code_type))
        genuine.setdefault(realpath(strfn), codes)
        return stat, co

    class VerifiedLoader(importlib.machinery.SourceFileLoader):
        # Test support modules pytest does not rewrite: compiled from checked source, never from bytecode.
        def get_code(self, fullname):
            path = self.get_filename(fullname)
            with open(path, "rb") as handle:
                source = verified(path, handle.read())
            return compile(source, path, "exec", dont_inherit=True)

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

    def guard_method(name):
        original = getattr(unittest.TestCase, name, None)
        if original is None:
            return

        def guarded(self, first, second, *args, **kwargs):
            return original(self, operand(first), operand(second), *args, **kwargs)

        guarded.__name__ = guarded.__qualname__ = name
        ours.add(guarded)
        setattr(unittest.TestCase, name, guarded)

    for name in ("assertEqual", "assertNotEqual", "assertAlmostEqual", "assertNotAlmostEqual", "assertIn", "assertNotIn",
                 "assertLess", "assertLessEqual", "assertGreater", "assertGreaterEqual", "assertCountEqual"):
        guard_method(name)

    # The watched internals, and whether each is what the installed packages define.
    roots = tuple(os.path.dirname(realpath(module.__file__)) + os.sep for module in (pytest, _pytest, pluggy, os, unittest))
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
        if code is not None and (untrusted(code.co_filename) or not realpath(code.co_filename).startswith(roots)):
            note("%s was replaced before the launcher started (by %s)" % (spec, code.co_filename))

    def check():
        if not any(finder is VerifiedFinder for finder in sys.meta_path):
            note("the launcher's import check was removed from sys.meta_path")
        for spec, owner, name, value in watched:
            if vars(owner).get(name, missing) is not value:
                note(spec)
        for hook in (sys.getprofile(), sys.gettrace()):
            if hook is None or any(hook is probe for probe in probes):
                continue
            code = code_of(hook)
            if code is None or untrusted(code.co_filename):
                note("a profile or trace function is installed while tests run (%r)" % (hook,))

    def allowed(plugin):
        if not isinstance(plugin, type(os)):
            return False
        file = realpath(getattr(plugin, "__file__", None) or "/")
        return os.path.basename(file) == "conftest.py" or not file.startswith(cwd + os.sep)

    suspect = ("runtest", "setup", "teardown", "_getobj", "ihook", "repr_failure", "reportinfo", "_prunetraceback", "obj")
    snapshots, targets, probes = {}, {}, []

    def function_of(item):
        obj = vars(item).get("_obj", missing)
        return getattr(obj, "__func__", obj)

    def test_codes(item):
        return genuine.get(realpath(str(getattr(item, "path", None) or getattr(item, "fspath", ""))))

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
        check()
        stopped = stop_everything_else()
        data = dumps({"nonce": nonce, "results": results, "tampered": tampered, "exitstatus": int(exitstatus), "stopped": stopped}).encode()
        fd = fs_open(report_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            while data:
                data = data[fs_write(fd, data):]
        finally:
            fs_close(fd)
        for stream in (sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:
                pass
        exit_now(int(exitstatus))

    class ShearsResults:
        __slots__ = ()

        @pytest.hookimpl(trylast=True)
        def pytest_sessionstart(self, session):
            state["config"] = session.config

        def pytest_plugin_registered(self, plugin):
            if "config" in state and not allowed(plugin):
                note("plugin registered during the run: " + repr(plugin)[:200])

        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session):
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
            if rank[status] > rank.get(results.get(nodeid), -1):
                results[nodeid] = status

    check()
    finish(pytest.main(sys.argv[1:], plugins=[ShearsResults()]))

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
    "pluggy._callers:_multicall",
    "pluggy._hooks:HookCaller.__call__",
    "pluggy._hooks:_HookCaller.__call__",
    "pluggy._hooks:HookCaller._hookexec",
    "pluggy._hooks:_HookCaller._hookexec",
    "pluggy._manager:PluginManager._hookexec",
    "unittest.case:TestCase.run",
    "unittest.case:TestCase.assertEqual",
    "unittest.case:TestCase.assertNotEqual",
    "unittest.case:TestCase.assertAlmostEqual",
    "unittest.case:TestCase.assertIn",
    "unittest.case:TestCase.assertTrue",
    "sys:settrace",
    "sys:setprofile",
    "sys:meta_path",
]
_shears_run()
