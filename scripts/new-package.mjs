// Scaffolds packages/<name> with the house package.json, tsconfigs and vitest config.
// Usage: node scripts/new-package.mjs <folder> "<description>" [dep@range ...] [--dev dep@range ...]
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';

const [folder, description, ...rest] = process.argv.slice(2);
const dir = `packages/${folder}`;
const deps = {};
const devDeps = {};
let target = deps;
for (const arg of rest) {
  if (arg === '--dev') {
    target = devDeps;
    continue;
  }
  const at = arg.lastIndexOf('@');
  const [name, range] = at > 0 ? [arg.slice(0, at), arg.slice(at + 1)] : [arg, 'workspace:*'];
  target[name] = range;
}
mkdirSync(`${dir}/src`, { recursive: true });
const pkg = {
  name: `@shears/${folder}`,
  version: '0.1.0',
  description,
  license: 'MIT',
  type: 'module',
  sideEffects: false,
  engines: { node: '>=20.19' },
  files: ['dist', 'src', '!src/**/*.test.ts'],
  exports: {
    '.': { '@shears/source': './src/index.ts', types: './dist/index.d.ts', import: './dist/index.js' },
    './package.json': './package.json',
  },
  scripts: {
    build: 'tsc -p tsconfig.build.json',
    typecheck: 'tsc -p tsconfig.json --noEmit',
    test: 'vitest run',
    publint: 'publint && attw --pack . --profile esm-only',
  },
  dependencies: deps,
  devDependencies: devDeps,
};
if (!existsSync(`${dir}/package.json`))
  writeFileSync(`${dir}/package.json`, `${JSON.stringify(pkg, null, 2)}\n`);
writeFileSync(
  `${dir}/tsconfig.json`,
  `${JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { noEmit: true }, include: ['src', 'test', 'bench'] }, null, 2)}\n`,
);
writeFileSync(
  `${dir}/tsconfig.build.json`,
  `${JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { outDir: 'dist', rootDir: 'src', noEmit: false }, include: ['src'], exclude: ['src/**/*.test.ts', 'src/**/*.test-d.ts'] }, null, 2)}\n`,
);
writeFileSync(
  `${dir}/vitest.config.ts`,
  `import { defineProject } from 'vitest/config';\nimport { sharedProject } from '../../vitest.shared.js';\n\nexport default defineProject(sharedProject('${folder}'));\n`,
);
console.log('scaffolded', dir);
