import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkFontPath } from './font-path.ts';
import { CommandRejected } from './parsed-command.ts';

const refusal = (path: string, kind: 'file' | 'folder', folders?: string[]): string => {
  try {
    checkFontPath(path, 'fontfile', kind, folders);
  } catch (error) {
    assert.ok(error instanceof CommandRejected);
    return error.message;
  }
  assert.fail(`accepted ${path}`);
};

test('accepts files and folders inside the font folders', () => {
  for (const path of ['/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', '/usr/local/share/fonts/My Font (Bold).otf']) {
    assert.equal(checkFontPath(path, 'fontfile', 'file'), path);
  }
  for (const path of ['/usr/share/fonts', '/usr/share/fonts/', '/usr/local/share/fonts/truetype']) {
    assert.equal(checkFontPath(path, 'fontsdir', 'folder'), path);
  }
});

test('refuses paths that leave the font folders or are not written plainly', () => {
  const cases: [string, 'file' | 'folder', string][] = [
    ['/usr/share/fonts/../../../etc/passwd', 'file', '"." and ".." are not allowed'],
    ['/usr/share/fonts/./x.ttf', 'file', '"." and ".."'],
    ['/usr/share/fonts//x.ttf', 'file', 'empty folder names'],
    ['/usr/share/fonts', 'file', 'outside the font folders'],
    ['/usr/share/fontsevil/x.ttf', 'file', 'outside the font folders'],
    ['/proc/self/root/usr/share/fonts/x.ttf', 'file', 'outside the font folders'],
    ['/proc/self/environ', 'file', 'outside the font folders'],
    ['/etc/passwd', 'folder', 'outside the font folders'],
    ['/usr/share/fonts/x.ttf\n', 'file', 'only letters'],
    ['/usr/share/fonts/a:b.ttf', 'file', 'only letters'],
    ['/usr/share/fonts/a\\b.ttf', 'file', 'only letters'],
    ['/usr/share/fonts/~/x.ttf', 'file', 'only letters'],
  ];
  for (const [path, kind, fragment] of cases) {
    const message = refusal(path, kind);
    assert.ok(message.includes(fragment), `${JSON.stringify(path)}: ${message}`);
  }
});

test('refuses a link inside a font folder that leads out of it', () => {
  const root = mkdtempSync(join(tmpdir(), 'fonts-'));
  const fonts = join(root, 'fonts');
  mkdirSync(join(fonts, 'truetype'), { recursive: true });
  writeFileSync(join(fonts, 'truetype', 'real.ttf'), 'font');
  writeFileSync(join(root, 'secret'), 'secret');
  symlinkSync(join(root, 'secret'), join(fonts, 'truetype', 'evil.ttf'));
  symlinkSync('/etc', join(fonts, 'etc'));
  symlinkSync('real.ttf', join(fonts, 'truetype', 'alias.ttf'));
  assert.ok(checkFontPath(join(fonts, 'truetype', 'real.ttf'), 'fontfile', 'file', [fonts]));
  assert.ok(checkFontPath(join(fonts, 'truetype', 'alias.ttf'), 'fontfile', 'file', [fonts]), 'a link within the folders');
  assert.match(refusal(join(fonts, 'truetype', 'evil.ttf'), 'file', [fonts]), /a link to a place outside the font folders/);
  assert.match(refusal(join(fonts, 'etc', 'passwd'), 'file', [fonts]), /a link to a place outside/);
  assert.match(refusal(join(fonts, 'etc'), 'folder', [fonts]), /a link to a place outside/);
});
