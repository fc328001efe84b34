-- One result per Job: a runner's report replayed with its Job's token after the result is refused by
-- the database itself, even when two arrive at the same moment. Extra results stored before (only a
-- hostile runner sends two) are dropped first; the first one is the one the operator used.
DELETE FROM "job_events" a USING "job_events" b
  WHERE a."job_name" = b."job_name" AND a."event"->>'type' = 'result' AND b."event"->>'type' = 'result' AND a."id" > b."id";--> statement-breakpoint
CREATE UNIQUE INDEX "job_events_one_result_idx" ON "job_events" USING btree ("job_name") WHERE "job_events"."event"->>'type' = 'result';
