-- Where a command's time went (issue 32): each ended step's queued, download, ffmpeg and upload
-- seconds, written with the step's result; and when the current step started (its job was started or
-- released by the cluster's queue), for the queued seconds of the step that runs now.
ALTER TABLE "commands" ADD COLUMN "timings" jsonb;--> statement-breakpoint
ALTER TABLE "commands" ADD COLUMN "step_started_at" timestamp (3) with time zone;--> statement-breakpoint
-- The queue's estimate counts the commands started in the last minutes.
CREATE INDEX "commands_started_at_idx" ON "commands" USING btree ("started_at") WHERE "commands"."started_at" IS NOT NULL;
