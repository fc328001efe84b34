// The documentation's lint step (scripts/lint.sh): README.md stays short, and every link in README.md
// and docs/ stays inside the repository and reaches a file that is there (and, for a Markdown file, the
// heading its #anchor names). A reader of a clone, or of a copy without network, follows every link.
// The checks are pure functions over the files' text (scripts/check-docs.test.ts); main() reads the files.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const README_MAX_LINES = 150;

/** What the check may ask of the repository: the files it holds (paths from its root, `/`-separated). */
export interface RepoFiles {
  /** A file, or a folder holding at least one file. */
  has(path: string): boolean;
  /** The text of a Markdown file, to find its headings. */
  read(path: string): string;
}

export interface Link {
  line: number;
  target: string;
}

/** Code blocks and code spans hold commands and example URLs, not links: blanked, line breaks kept. */
function withoutCode(text: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ');
  const lines = text.split('\n');
  let fence: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const opening = /^\s{0,3}(`{3,}|~{3,})/.exec(lines[i]);
    if (fence === null && opening) {
      fence = opening[1];
      lines[i] = blank(lines[i]);
    } else if (fence !== null) {
      if (lines[i].trim().startsWith(fence)) fence = null;
      lines[i] = blank(lines[i]);
    }
  }
  return lines.join('\n').replace(/(`+)[\s\S]*?\1/g, blank);
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

/** Every link of a Markdown text: inline, reference definitions, autolinks, HTML attributes and bare web addresses. */
export function linksIn(markdown: string): Link[] {
  const text = withoutCode(markdown);
  const found = new Map<string, Link>();
  const add = (index: number, target: string) => {
    const link = { line: lineOf(text, index), target };
    found.set(`${link.line} ${target}`, link);
  };
  const patterns = [
    /\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g, // [text](target "title")
    /^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/gm, // [name]: target
    /<([a-z][a-z0-9+.-]*:[^\s<>]*)>/gi, // <scheme:...>
    /\b(?:href|src)\s*=\s*["']([^"']*)["']/gi, // <a href="..."> <img src="...">
    /(?:\bwww\.|\b[a-z][a-z0-9+.-]*:\/\/)[^\s<>()[\]`'"]+/gi, // bare addresses, which renderers link too
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) add(match.index, match[1] ?? match[0]);
  }
  return [...found.values()].sort((a, b) => a.line - b.line);
}

/** The anchor a renderer gives a heading (GitHub's rule): lower case, punctuation dropped, spaces to hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown text's headings; a repeated heading gets -1, -2, ... as renderers number them. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown).split('\n')) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = headingAnchor(heading[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** A `# comment` in a shell block is no heading. */
function withoutFences(markdown: string): string {
  let inFence = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s{0,3}(`{3,}|~{3,})/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

/** What is wrong with one link of `file` (a path from the repository's root), or null. */
export function linkProblem(file: string, target: string, repo: RepoFiles): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//') || /^www\./i.test(target)) {
    return `${target} leaves the repository: name the project in plain text instead`;
  }
  if (target.startsWith('/')) return `${target} is absolute: write it relative to ${file}`;
  const hash = target.indexOf('#');
  const pathPart = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? null : target.slice(hash + 1);
  let path = file;
  if (pathPart !== '') {
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathPart);
    } catch {
      return `${target} is not a valid link`;
    }
    path = posix.normalize(posix.join(posix.dirname(file), decoded)).replace(/\/$/, '');
    if (path === '..' || path.startsWith('../')) return `${target} leaves the repository`;
    if (!repo.has(path)) return `${target}: ${path} is not in the repository`;
  }
  if (anchor !== null && anchor !== '' && path.endsWith('.md') && !anchorsOf(repo.read(path)).has(anchor.toLowerCase())) {
    return `${target}: ${path} has no heading #${anchor}`;
  }
  return null;
}

/** Every problem of one Markdown file, as `file:line: problem`. */
export function checkMarkdown(file: string, text: string, repo: RepoFiles): string[] {
  const problems: string[] = [];
  for (const link of linksIn(text)) {
    const problem = linkProblem(file, link.target, repo);
    if (problem) problems.push(`${file}:${link.line}: ${problem}`);
  }
  if (file === 'README.md') {
    const lines = text.replace(/\n+$/, '').split('\n').length;
    if (lines > README_MAX_LINES) {
      problems.push(`README.md: ${lines} lines, more than ${README_MAX_LINES}: move the detail into docs/ and link it`);
    }
  }
  return problems;
}

/** The files git holds or would add (tracked, and untracked but not ignored), from the repository's root. */
function repositoryFiles(root: string): { files: string[]; repo: RepoFiles } {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter(Boolean);
  const paths = new Set<string>();
  for (const file of files) {
    // A folder is there when a file under it is.
    const parts = file.split('/');
    for (let i = 1; i <= parts.length; i++) paths.add(parts.slice(0, i).join('/'));
  }
  return { files, repo: { has: (path) => paths.has(path), read: (path) => readFileSync(posix.join(root, path), 'utf8') } };
}

function main(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const { files, repo } = repositoryFiles(root);
  const checked = ['README.md', ...files.filter((file) => file.startsWith('docs/') && file.endsWith('.md')).sort()];
  const problems = checked.flatMap((file) => checkMarkdown(file, repo.read(file), repo));
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) process.exit(1);
  console.log(`docs: ${checked.length} files, every link inside the repository and found`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
