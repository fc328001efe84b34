// Splits ffmpeg_command into arguments the way a POSIX shell does (and Python's shlex.split), without
// any expansion. Clients copy commands from a terminal, so `-vf "drawtext=text='a\: b'"` must reach
// ffmpeg as the shell would pass it: inside double quotes a backslash stays unless it escapes
// `\`, `"`, `$`, a backquote or a newline, and inside single quotes nothing is special.
import { CommandRejected } from './parsed-command.ts';

const BLANK = ' \t\r\n';
const ESCAPABLE_IN_DOUBLE_QUOTES = '\\"$`\n';

export function splitCommandLine(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false; // '' and "" make an (empty) argument, so emptiness is not enough
  let p = 0;
  const unterminated = (quote: string): never => {
    throw new CommandRejected(`ffmpeg_command has an unterminated quote: a ${quote} is opened but never closed`);
  };
  while (p < text.length) {
    const c = text[p++];
    if (BLANK.includes(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      continue;
    }
    if (c === '\\' && text[p] === '\n') {
      p++; // a line continuation joins the lines, it is no part of a word
      continue;
    }
    inWord = true;
    if (c === '\\') {
      word += p < text.length ? text[p++] : c;
    } else if (c === "'") {
      const close = text.indexOf("'", p);
      if (close < 0) unterminated("'");
      word += text.slice(p, close);
      p = close + 1;
    } else if (c === '"') {
      for (;;) {
        if (p >= text.length) unterminated('"');
        const d = text[p++];
        if (d === '"') break;
        if (d === '\\' && p < text.length && ESCAPABLE_IN_DOUBLE_QUOTES.includes(text[p])) {
          const escaped = text[p++];
          if (escaped !== '\n') word += escaped;
        } else {
          word += d;
        }
      }
    } else {
      word += c;
    }
  }
  if (inWord) words.push(word);
  return words;
}
