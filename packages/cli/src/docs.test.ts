// The project's docs stand alone: every relative link in the READMEs and docs/ points at a file
// of this repository, nothing points at reference material outside it, and the `$schema` path
// the docs give for a checkout exists. (The path for an installed @shears/cli is checked by
// scripts/registry-check.ts in a project outside the workspace.)
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');

function markdownFiles(): string[] {
  const files = [join(root, 'README.md'), join(root, 'DEVELOPERS.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md') && entry.name !== 'CHANGELOG.md') files.push(path);
    }
  };
  for (const dir of ['docs', 'packages', 'examples']) walk(join(root, dir));
  return files;
}

describe('the docs', () => {
  const files = markdownFiles();

  it('link only to files that exist in the repository', () => {
    const broken: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!.split('#')[0]!;
        if (target === '' || /^[a-z]+:/i.test(target)) continue;
        if (!existsSync(join(dirname(file), target))) broken.push(`${relative(root, file)} → ${match[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('point at no reference material outside the repository', () => {
    const outside: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/(?:shared\/)?reference\/[\w.-]+\.md/g))
        if (!existsSync(join(root, match[0]))) outside.push(`${relative(root, file)}: ${match[0]}`);
    }
    expect(outside).toEqual([]);
  });

  it('give a $schema path that exists in a checkout', () => {
    const configuration = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
    const checkout = /in a checkout of this repository, for a config at its root: `\$schema: (\S+)`/.exec(
      configuration,
    );
    expect(checkout?.[1]).toBeDefined();
    expect(existsSync(join(root, checkout![1]!))).toBe(true);
  });
});
