-- POST /v1/commands/{id}/retry: the new command names the FAILED one it retries (retry_of), and the
-- FAILED one names its retry (retried_by). A command is retried at most once: two retries at the same
-- moment make one command (the unique index). retried_by is written by a trigger in the insert's own
-- transaction, so the two never disagree, and its UPDATE tells the poll caches (migration 0004).
ALTER TABLE "commands" ADD COLUMN "retry_of" uuid REFERENCES "commands"("id");--> statement-breakpoint
ALTER TABLE "commands" ADD COLUMN "retried_by" uuid;--> statement-breakpoint
CREATE UNIQUE INDEX "commands_retry_of_idx" ON "commands" USING btree ("retry_of") WHERE "commands"."retry_of" IS NOT NULL;--> statement-breakpoint
CREATE FUNCTION ffop_note_retry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE commands SET retried_by = NEW.id WHERE id = NEW.retry_of;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER commands_note_retry AFTER INSERT ON commands
  FOR EACH ROW WHEN (NEW.retry_of IS NOT NULL) EXECUTE FUNCTION ffop_note_retry();
