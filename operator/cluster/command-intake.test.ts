import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RequestInvalid } from '../../api/schemas/validation.ts';
import { invalidMessage } from './command-intake.ts';

test("a 422's items name where they are in the spec, with the HTTP API's text", () => {
  const err = new RequestInvalid([
    { loc: ['body', 'ffmpeg_command'], msg: 'Value error, {{in_2}} is not declared in input_files', type: 'value_error' },
    { loc: ['body', 'input_files', 'in_1'], msg: 'Input should be a valid URL', type: 'url_parsing' },
    { loc: ['body', 'ffmpeg_commands', 1], msg: 'Value error, x', type: 'value_error' },
    { loc: ['body'], msg: 'Field required', type: 'missing' },
  ]);
  assert.equal(
    invalidMessage(err),
    'spec.command: Value error, {{in_2}} is not declared in input_files; spec.inputFiles.in_1: Input should be a valid URL; ' +
      'spec.commands.1: Value error, x; spec: Field required',
  );
});
