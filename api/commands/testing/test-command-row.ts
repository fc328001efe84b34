// A command row as the API stores it, for tests that put one straight into the database.
import type { Caller } from '../../../core/accounts/accounts-repo.ts';
import type { NewCommandRow } from '../../../core/commands/commands-repo.ts';
import type { RunCommandRequest } from '../../schemas/commands.ts';
import { singleCommandRow } from '../submission.ts';

/** One second of testsrc into out_1 (o.mp4) on 1 vCPU; `request` changes any field of the submission. */
export function testCommandRow(caller: Caller, request: Partial<RunCommandRequest> = {}): NewCommandRow {
  return singleCommandRow(caller, {
    ffmpeg_command: '-f lavfi -i testsrc=d=1 {{out_1}}',
    output_files: { out_1: 'o.mp4' },
    max_command_run_seconds: 60,
    vcpu_count: 1,
    is_private: false,
    ...request,
  });
}
