export const CommandStatus = {
  QUEUED: 'QUEUED',
  PROCESSING: 'PROCESSING',
  // In the spec's enum; this implementation never reports it (a command goes QUEUED -> PROCESSING).
  PREPARED_FFMPEG_COMMAND: 'PREPARED_FFMPEG_COMMAND',
  FAILED: 'FAILED',
  SUCCESS: 'SUCCESS',
} as const;
export type CommandStatus = (typeof CommandStatus)[keyof typeof CommandStatus];

/** SUCCESS or FAILED: the command will not change again. */
export const hasEnded = (status: string): boolean => status === CommandStatus.SUCCESS || status === CommandStatus.FAILED;

export const CommandType = {
  FFMPEG_COMMAND: 'FFMPEG_COMMAND',
  FFMPEG_CHAINED_COMMANDS: 'FFMPEG_CHAINED_COMMANDS',
} as const;
export type CommandType = (typeof CommandType)[keyof typeof CommandType];
