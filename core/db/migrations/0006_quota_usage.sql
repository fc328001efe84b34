CREATE TABLE "account_monthly_processing" (
	"account_id" uuid NOT NULL,
	"month" date NOT NULL,
	"processed_bytes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "account_monthly_processing_account_id_month_pk" PRIMARY KEY("account_id","month")
);
--> statement-breakpoint
CREATE TABLE "account_storage" (
	"account_id" uuid PRIMARY KEY NOT NULL,
	"stored_bytes" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- Quota figures kept as running sums, whichever process writes (the API, the operator, the embedded
-- engine): a submit's quota check reads two rows instead of summing every file and every command of
-- the month (which made each submit slower as an account's commands grew).
CREATE FUNCTION ffop_add_stored_bytes(account uuid, delta bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF delta <> 0 THEN
    INSERT INTO account_storage (account_id, stored_bytes) VALUES (account, delta)
      ON CONFLICT (account_id) DO UPDATE SET stored_bytes = account_storage.stored_bytes + EXCLUDED.stored_bytes;
  END IF;
END $$;
--> statement-breakpoint
-- A file counts while it is neither deleted nor FAILED: its size once known, its announced size before.
CREATE FUNCTION ffop_count_stored_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  old_bytes bigint := 0;
  new_bytes bigint := 0;
BEGIN
  IF TG_OP <> 'INSERT' AND NOT OLD.is_deleted AND OLD.status <> 'FAILED' THEN
    old_bytes := coalesce(OLD.size_bytes, OLD.expected_size_bytes, 0);
  END IF;
  IF TG_OP <> 'DELETE' AND NOT NEW.is_deleted AND NEW.status <> 'FAILED' THEN
    new_bytes := coalesce(NEW.size_bytes, NEW.expected_size_bytes, 0);
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.account_id = NEW.account_id THEN
    PERFORM ffop_add_stored_bytes(NEW.account_id, new_bytes - old_bytes);
  ELSE
    IF TG_OP <> 'INSERT' THEN PERFORM ffop_add_stored_bytes(OLD.account_id, -old_bytes); END IF;
    IF TG_OP <> 'DELETE' THEN PERFORM ffop_add_stored_bytes(NEW.account_id, new_bytes); END IF;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION ffop_add_processed_bytes(account uuid, created timestamptz, delta bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF delta <> 0 THEN
    INSERT INTO account_monthly_processing (account_id, month, processed_bytes)
      VALUES (account, date_trunc('month', created AT TIME ZONE 'UTC')::date, delta)
      ON CONFLICT (account_id, month) DO UPDATE
      SET processed_bytes = account_monthly_processing.processed_bytes + EXCLUDED.processed_bytes;
  END IF;
END $$;
--> statement-breakpoint
-- A command's processed bytes count in the UTC month it was created in.
CREATE FUNCTION ffop_count_processed_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.account_id = NEW.account_id
     AND date_trunc('month', OLD.created_at AT TIME ZONE 'UTC') = date_trunc('month', NEW.created_at AT TIME ZONE 'UTC') THEN
    PERFORM ffop_add_processed_bytes(NEW.account_id, NEW.created_at, NEW.processed_bytes - OLD.processed_bytes);
  ELSE
    IF TG_OP <> 'INSERT' THEN PERFORM ffop_add_processed_bytes(OLD.account_id, OLD.created_at, -OLD.processed_bytes); END IF;
    IF TG_OP <> 'DELETE' THEN PERFORM ffop_add_processed_bytes(NEW.account_id, NEW.created_at, NEW.processed_bytes); END IF;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER files_count_stored_bytes AFTER INSERT OR UPDATE OR DELETE ON files
  FOR EACH ROW EXECUTE FUNCTION ffop_count_stored_bytes();
--> statement-breakpoint
-- New commands have processed nothing yet: an insert with bytes (imports, tests) still counts them.
CREATE TRIGGER commands_count_processed_bytes_insert AFTER INSERT ON commands
  FOR EACH ROW WHEN (NEW.processed_bytes <> 0) EXECUTE FUNCTION ffop_count_processed_bytes();
--> statement-breakpoint
CREATE TRIGGER commands_count_processed_bytes AFTER UPDATE OF processed_bytes, account_id, created_at OR DELETE ON commands
  FOR EACH ROW EXECUTE FUNCTION ffop_count_processed_bytes();
--> statement-breakpoint
-- What existed before this migration (the triggers above lock both tables against writes meanwhile).
INSERT INTO account_storage (account_id, stored_bytes)
  SELECT account_id, sum(coalesce(size_bytes, expected_size_bytes, 0)) FROM files
  WHERE NOT is_deleted AND status <> 'FAILED' GROUP BY account_id;
--> statement-breakpoint
INSERT INTO account_monthly_processing (account_id, month, processed_bytes)
  SELECT account_id, date_trunc('month', created_at AT TIME ZONE 'UTC')::date, sum(processed_bytes) FROM commands
  WHERE processed_bytes <> 0 GROUP BY 1, 2;
--> statement-breakpoint
-- The webhook sender's wake-up: per inserted row (one notification per transaction, as identical ones
-- merge), no longer per statement: every command that ended on an account without a webhook inserted
-- no row but still woke the sender, which then ran its two queries for nothing.
DROP TRIGGER webhook_deliveries_notify ON webhook_deliveries;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
  FOR EACH ROW EXECUTE FUNCTION ffop_notify_channel('ffop_webhook_delivery');
