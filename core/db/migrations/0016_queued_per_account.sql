-- The admission read (commands-repo.ts, admissibleSql) takes each waiting account's oldest QUEUED
-- commands in order, a few at a time, instead of ranking the whole queue on every reconcile pass: its
-- cost then follows the commands it may start, not the length of the queue.
CREATE INDEX IF NOT EXISTS "commands_queued_account_idx" ON "commands" USING btree ("account_id","seq") WHERE "commands"."status" = 'QUEUED' and not "commands"."in_cluster_queue";
