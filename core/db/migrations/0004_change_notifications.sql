-- Writers tell readers what changed, whichever process they run in (LISTEN/NOTIFY, delivered on
-- commit): the API's in-memory poll records and authenticated keys forget what a notification names.
CREATE FUNCTION ffop_notify_command_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'commands' THEN
    PERFORM pg_notify('ffop_command_changed', OLD.id::text);
  ELSE
    IF TG_OP <> 'INSERT' AND OLD.command_id IS NOT NULL THEN
      PERFORM pg_notify('ffop_command_changed', OLD.command_id::text);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.command_id IS NOT NULL THEN
      PERFORM pg_notify('ffop_command_changed', NEW.command_id::text);
    END IF;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- A new command is not cached yet: only updates and deletes concern readers.
CREATE TRIGGER commands_notify_changed AFTER UPDATE OR DELETE ON commands
  FOR EACH ROW EXECUTE FUNCTION ffop_notify_command_changed();
--> statement-breakpoint
CREATE TRIGGER files_notify_changed AFTER INSERT OR UPDATE OR DELETE ON files
  FOR EACH ROW EXECUTE FUNCTION ffop_notify_command_changed();
--> statement-breakpoint
-- A signal without a payload, on the channel the trigger names (its argument).
CREATE FUNCTION ffop_notify_channel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_ARGV[0], '');
  RETURN NULL;
END $$;
--> statement-breakpoint
-- A revoked key, an account moved to another plan, an edited plan: rare, so one signal for all.
CREATE TRIGGER api_keys_notify_changed AFTER UPDATE OR DELETE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION ffop_notify_channel('ffop_keys_changed');
--> statement-breakpoint
CREATE TRIGGER accounts_notify_changed AFTER UPDATE OR DELETE ON accounts
  FOR EACH STATEMENT EXECUTE FUNCTION ffop_notify_channel('ffop_keys_changed');
--> statement-breakpoint
CREATE TRIGGER plans_notify_changed AFTER UPDATE OR DELETE ON plans
  FOR EACH STATEMENT EXECUTE FUNCTION ffop_notify_channel('ffop_keys_changed');
--> statement-breakpoint
-- A runner's event (cluster mode, stored by the API): the operator reads new events at once instead of
-- at its next poll.
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events
  FOR EACH STATEMENT EXECUTE FUNCTION ffop_notify_channel('ffop_job_event');
