// The documentation check's rules, on made-up files (scripts/lint.sh runs this before the check itself).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anchorsOf, checkMarkdown, headingAnchor, linksIn, README_MAX_LINES, type RepoFiles } from './check-docs.ts';

function repoOf(files: Record<string, string>): RepoFiles {
  const paths = new Set<string>();
  for (const file of Object.keys(files)) {
    const parts = file.split('/');
    for (let i = 1; i <= parts.length; i++) paths.add(parts.slice(0, i).join('/'));
  }
  return { has: (path) => paths.has(path), read: (path) => files[path] ?? '' };
}

const repo = repoOf({
  'README.md': '# Title\n',
  'docs/api.md': '# The API\n\n## Errors of the HTTP API\n\n## `vcpu_count` and admission\n\n## Notes\n\n## Notes\n',
  'docs/cluster.md': '# Cluster\n',
  'charts/ffmpeg-operator/values.yaml': 'a: 1\n',
});

test('relative links to files, folders and headings that exist pass', () => {
  const text = [
    'See [the API](docs/api.md), [errors](docs/api.md#errors-of-the-http-api), [vCPUs](docs/api.md#vcpu_count-and-admission),',
    'the second [notes](docs/api.md#notes-1), [values](charts/ffmpeg-operator/values.yaml), [the chart](charts/ffmpeg-operator/)',
    'and [this](#title).',
  ].join('\n');
  assert.deepEqual(checkMarkdown('README.md', '# Title\n' + text, repo), []);
  assert.deepEqual(checkMarkdown('docs/cluster.md', '[back](../README.md) [api](api.md#the-api) [self](#cluster)', repo), []);
});

test('a link to a missing file or heading fails, naming the line', () => {
  assert.deepEqual(checkMarkdown('README.md', 'one\n[gone](docs/gone.md)\n', repo), [
    'README.md:2: docs/gone.md: docs/gone.md is not in the repository',
  ]);
  assert.deepEqual(checkMarkdown('docs/cluster.md', '[x](api.md#no-such-heading)', repo), [
    'docs/cluster.md:1: api.md#no-such-heading: docs/api.md has no heading #no-such-heading',
  ]);
});

test('links that leave the repository fail: ../ out of it, absolute paths, any scheme, bare web addresses', () => {
  const text = [
    '[spec](../../shared/spec/api-spec.md)',
    '[design](/DESIGN.md)',
    '[kueue](https://kueue.sigs.k8s.io)',
    '<https://example.com/a>',
    'see www.example.com or http://example.org/x for more',
    '[mail](mailto:a@example.com) [proto](//cdn.example.com/x.js)',
    '<a href="https://example.net">x</a>',
    '[ref]: https://example.com/ref',
  ].join('\n');
  const problems = checkMarkdown('docs/api.md', text, repo);
  assert.equal(problems.length, 10, problems.join('\n'));
  assert.match(problems[0], /^docs\/api\.md:1: \.\.\/\.\.\/shared\/spec\/api-spec\.md leaves the repository/);
  assert.match(problems[1], /^docs\/api\.md:2: \/DESIGN\.md is absolute/);
  for (const problem of problems.slice(2)) assert.match(problem, /leaves the repository: name the project in plain text/);
});

test('commands and example addresses in code are not links', () => {
  const text = [
    'Open `http://127.0.0.1:8080/dashboard` and run ``curl https://example.com/`x` ``.',
    '```sh',
    'curl -s http://127.0.0.1:8080/v1/commands  # [not](a/link.md)',
    '```',
    '~~~',
    'https://example.com',
    '~~~',
  ].join('\n');
  assert.deepEqual(linksIn(text), []);
  assert.deepEqual(checkMarkdown('docs/api.md', text, repo), []);
});

test(`README.md may have at most ${README_MAX_LINES} lines; other files any number`, () => {
  const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i}`).join('\n') + '\n';
  assert.deepEqual(checkMarkdown('README.md', lines(README_MAX_LINES), repo), []);
  assert.deepEqual(checkMarkdown('README.md', lines(README_MAX_LINES + 1), repo), [
    `README.md: ${README_MAX_LINES + 1} lines, more than ${README_MAX_LINES}: move the detail into docs/ and link it`,
  ]);
  assert.deepEqual(checkMarkdown('docs/api.md', lines(1000), repo), []);
});

test('heading anchors follow the renderers: punctuation dropped, code and links unwrapped, repeats numbered', () => {
  assert.equal(
    headingAnchor('What is refused at submit, and what is left to ffmpeg'),
    'what-is-refused-at-submit-and-what-is-left-to-ffmpeg',
  );
  assert.equal(headingAnchor('`FFOP_QUEUE_RETRY_SECONDS` (built-in)'), 'ffop_queue_retry_seconds-built-in');
  assert.equal(headingAnchor('See [the chart](x.md): Helm'), 'see-the-chart-helm');
  assert.deepEqual([...anchorsOf('# A\n## A\n```sh\n# not a heading\n```\n### A\n')], ['a', 'a-1', 'a-2']);
});
