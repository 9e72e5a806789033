import { describe, expect, it } from 'vitest';
import type { FileChange } from './agent-change.js';
import { type ChangePolicy, sortOutChange } from './change-policy.js';
import type { TreeEntry, TreeManifest } from './container-tree.js';

const entry = (
  path: string,
  type: TreeEntry['type'] = 'file',
  extra: Partial<TreeEntry> = {},
): TreeEntry => ({
  path,
  type,
  mode: 0o644,
  size: 1,
  ...extra,
});
const added = (
  path: string,
  type: TreeEntry['type'] = 'file',
  extra: Partial<TreeEntry> = {},
): FileChange => ({
  path,
  kind: 'added',
  after: entry(path, type, extra),
});
const modified = (path: string): FileChange => ({
  path,
  kind: 'modified',
  before: entry(path),
  after: entry(path),
});
const deleted = (path: string, type: TreeEntry['type'] = 'file'): FileChange => ({
  path,
  kind: 'deleted',
  before: entry(path, type),
});

function reasons(changes: FileChange[], policy: Partial<ChangePolicy> = {}): Record<string, string | null> {
  const { applied, dropped } = sortOutChange(changes, {
    testPaths: new Set(['tests/test_calc.py', 'spec/hidden_check.py']),
    runner: 'pytest',
    shadowNames: new Set(['json', 'decimal', 'requests']),
    ...policy,
  });
  return Object.fromEntries([
    ...applied.map((change) => [change.path, null] as const),
    ...dropped.map((drop) => [drop.path, drop.reason] as const),
  ]);
}

describe('sortOutChange', () => {
  it('applies changes to the code under test', () => {
    expect(
      reasons([
        modified('calc.py'),
        added('pkg/util.py'),
        deleted('pkg/old.py'),
        added('docs/notes.md'),
        added('src/app.js'),
      ]),
    ).toEqual({
      'calc.py': null,
      'pkg/util.py': null,
      'pkg/old.py': null,
      'docs/notes.md': null,
      'src/app.js': null,
    });
  });

  it('drops tests, test configuration, start-up hooks, dependencies, git metadata, links and special files', () => {
    expect(
      reasons([
        modified('tests/test_calc.py'),
        added('spec/hidden_check.py'),
        added('tests/conftest.py'),
        added('conftest.py'),
        added('sub/dir/conftest.py'),
        added('test_extra.py'),
        added('pkg/calc_test.py'),
        added('web/app.test.js'),
        added('web/app.spec.ts'),
        added('__tests__/x.js'),
        deleted('tests', 'directory'),
        deleted('pytest.ini'),
        added('pytest.toml'),
        added('.pytest.toml'),
        added('tox.ini'),
        added('pkg/setup.cfg'),
        added('tests/pyproject.toml'),
        modified('package.json'),
        added('.npmrc'),
        added('.mocharc.yml'),
        added('jest.config.js'),
        added('sitecustomize.py'),
        added('lib/usercustomize.py'),
        added('evil.pth'),
        added('force-1.0.dist-info/entry_points.txt'),
        added('pkg.egg-info/PKG-INFO'),
        added('__pycache__/calc.cpython-311.pyc'),
        added('calc.pyc'),
        added('node_modules/left-pad/index.js'),
        added('venv/lib/python3.11/site-packages/x.py'),
        added('sub/.git/config'),
        added('link.py', 'symlink', { linkname: '/etc/passwd' }),
        added('fifo', 'other'),
        added('bad\uFFFDname.py'),
      ]),
    ).toEqual({
      'tests/test_calc.py': 'test file',
      'spec/hidden_check.py': 'test file',
      'tests/conftest.py': 'test file',
      'conftest.py': 'test configuration',
      'sub/dir/conftest.py': 'test configuration',
      'test_extra.py': 'test file',
      'pkg/calc_test.py': 'test file',
      'web/app.test.js': 'test file',
      'web/app.spec.ts': 'test file',
      '__tests__/x.js': 'test file',
      tests: 'test file',
      'pytest.ini': 'test configuration',
      // pytest 9 reads pytest.toml and .pytest.toml (the bundled image's pytest 7 does not).
      'pytest.toml': 'test configuration',
      '.pytest.toml': 'test configuration',
      'tox.ini': 'test configuration',
      'pkg/setup.cfg': 'test configuration',
      'tests/pyproject.toml': 'test file',
      'package.json': 'test configuration',
      '.npmrc': 'test configuration',
      '.mocharc.yml': 'test configuration',
      'jest.config.js': 'test configuration',
      'sitecustomize.py': 'interpreter start-up hook, package metadata or bytecode',
      'lib/usercustomize.py': 'interpreter start-up hook, package metadata or bytecode',
      'evil.pth': 'interpreter start-up hook, package metadata or bytecode',
      'force-1.0.dist-info/entry_points.txt': 'interpreter start-up hook, package metadata or bytecode',
      'pkg.egg-info/PKG-INFO': 'interpreter start-up hook, package metadata or bytecode',
      '__pycache__/calc.cpython-311.pyc': 'interpreter start-up hook, package metadata or bytecode',
      'calc.pyc': 'interpreter start-up hook, package metadata or bytecode',
      'node_modules/left-pad/index.js': 'installed dependency',
      'venv/lib/python3.11/site-packages/x.py': 'installed dependency',
      'sub/.git/config': 'git metadata',
      'link.py': 'symbolic link (only regular files are applied)',
      fifo: 'not a regular file (FIFO, device or socket)',
      'bad\uFFFDname.py': 'file name is not valid UTF-8',
    });
  });

  it('drops a path that would displace a test file (a file where a test directory must be)', () => {
    expect(reasons([added('spec', 'file')])).toEqual({ spec: 'would displace a test file' });
  });

  it('drops added modules that shadow pytest or an installed or standard module, from a directory that can be on sys.path', () => {
    const rolloutTree: TreeManifest = new Map([
      ['pkg/__init__.py', entry('pkg/__init__.py')],
      ['scripts/x.py', entry('scripts/x.py')],
    ]);
    expect(
      reasons(
        [
          added('pytest.py'),
          added('_pytest/__init__.py'),
          added('pluggy.py'),
          added('json.py'),
          added('decimal/__init__.py'),
          added('requests.py'),
          added('scripts/json.py'),
          added('pkg/json.py'),
          added('mymodule.py'),
        ],
        { rolloutTree },
      ),
    ).toEqual({
      'pytest.py': 'shadows an installed or standard-library module',
      '_pytest/__init__.py': 'shadows an installed or standard-library module',
      'pluggy.py': 'shadows an installed or standard-library module',
      'json.py': 'shadows an installed or standard-library module',
      'decimal/__init__.py': 'shadows an installed or standard-library module',
      'requests.py': 'shadows an installed or standard-library module',
      'scripts/json.py': 'shadows an installed or standard-library module',
      'pkg/json.py': null,
      'mymodule.py': null,
    });
  });

  it('lets the change modify a module the repository already had, whatever its name', () => {
    expect(reasons([modified('json.py')])).toEqual({ 'json.py': null });
  });

  it('leaves module names alone for the node runner', () => {
    expect(reasons([added('json.py'), added('pytest.py')], { runner: 'node-test' })).toEqual({
      'json.py': null,
      'pytest.py': null,
    });
  });

  it("honours the task's protected and allowed paths; allowed never reaches tests or start-up hooks", () => {
    expect(
      reasons(
        [
          modified('setup.cfg'),
          modified('pyproject.toml'),
          added('vendor/lib.py'),
          modified('tests/test_calc.py'),
          added('x.pth'),
        ],
        {
          protectedPaths: ['vendor/**'],
          allowedPaths: ['setup.cfg', 'tests/**', '*.pth'],
        },
      ),
    ).toEqual({
      'setup.cfg': null,
      'pyproject.toml': 'test configuration',
      'vendor/lib.py': 'protected by the task',
      'tests/test_calc.py': 'test file',
      'x.pth': 'interpreter start-up hook, package metadata or bytecode',
    });
  });

  it('drops a file too large to read', () => {
    expect(reasons([added('data.csv', 'file', { oversize: true })])).toEqual({
      'data.csv': 'file too large to apply',
    });
  });
});
