-- ffmpeg's stderr of each step of a command (GET /v1/commands/{id}/log): the runner sends it in pieces
-- while ffmpeg runs; each append keeps only the last 1 MiB (1,048,576 characters) and counts what it cut.
-- Removed with the retention (FFOP_LOG_RETENTION_DAYS after the command ended) by the API's prune.
CREATE TABLE "command_logs" (
  "command_id" uuid NOT NULL REFERENCES "commands"("id") ON DELETE CASCADE,
  "step" integer NOT NULL,
  "text" text NOT NULL,
  "cut_chars" bigint DEFAULT 0 NOT NULL,
  "updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
  PRIMARY KEY ("command_id", "step")
);
