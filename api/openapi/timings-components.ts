// Response schemas of where a command's time went and where it waits (core/commands/timings.ts,
// core/commands/queue-snapshot.ts; the user's guide is docs/automation.md).

const phaseSeconds = (what: string) => ({ type: ['number', 'null'], minimum: 0, description: what });

const PHASES = {
  queued_seconds: phaseSeconds(
    'From when the step could run (the creation of the command for step 1, the end of the step before for a later step) to when it started.',
  ),
  download_seconds: phaseSeconds(
    'Fetching and preparing the inputs (stages DOWNLOADING and PREPARING_INPUT_FILES), as the runner measured it.',
  ),
  ffmpeg_seconds: phaseSeconds("ffmpeg's own run."),
  upload_seconds: phaseSeconds('Probing and storing the outputs (stage UPLOADING), as the runner measured it.'),
};

export const timingsSchema = {
  type: 'object',
  description:
    'Where the time went. Top level: the sum over the steps of what is known so far (null when no step has it yet); ' +
    'steps: one entry per step that has started or ended. A value not known yet (the phase has not ended, or an older runner did not report it) is null.',
  properties: {
    ...PHASES,
    steps: {
      type: 'array',
      items: {
        type: 'object',
        properties: { step: { type: 'integer', minimum: 1, description: 'The step, from 1.' }, ...PHASES },
        required: ['step', ...Object.keys(PHASES)],
      },
    },
  },
  required: [...Object.keys(PHASES), 'steps'],
};

export const queueFields = {
  queue_position: {
    type: ['integer', 'null'],
    minimum: 0,
    description:
      'While QUEUED: how many QUEUED commands are ahead of it in the order the service starts them (plan priority, then arrival); 0 = next. ' +
      'Null when not QUEUED, for a moment right after the submit, and in cluster mode with Kueue (Kueue decides the order).',
  },
  estimated_start_seconds: {
    type: ['integer', 'null'],
    minimum: 0,
    description:
      'While queue_position is set: seconds until it may start, at the rate commands started in the last 15 minutes. Null when none started.',
  },
};
