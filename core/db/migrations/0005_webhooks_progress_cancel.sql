CREATE TABLE "webhook_deliveries" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"environment_name" text NOT NULL,
	"event_type" text NOT NULL,
	"subject_id" uuid,
	"payload" text,
	"status" text NOT NULL,
	"attempts" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"next_attempt_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "webhooks" (
	"account_id" uuid NOT NULL,
	"environment_name" text NOT NULL,
	"url" text NOT NULL,
	"secret" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhooks_account_id_environment_name_pk" PRIMARY KEY("account_id","environment_name")
);
--> statement-breakpoint
ALTER TABLE "commands" ADD COLUMN "progress" jsonb;--> statement-breakpoint
ALTER TABLE "commands" ADD COLUMN "cancel_requested_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_account_idx" ON "webhook_deliveries" USING btree ("account_id","environment_name","created_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE "webhook_deliveries"."status" = 'PENDING';--> statement-breakpoint
-- Webhook messages are written in the transaction that ends a command or a stored file, whichever
-- process writes it (the operator, an API replica, the embedded service): a crash cannot lose one.
-- The payload is built by the sender at the first attempt, from the committed record.
CREATE FUNCTION ffop_enqueue_webhook() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  event_type text;
BEGIN
  IF NEW.status NOT IN ('SUCCESS', 'FAILED', 'STORED') THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.status = NEW.status THEN
    RETURN NULL;
  END IF;
  IF TG_TABLE_NAME = 'commands' THEN
    event_type := 'command.finished';
  ELSE
    -- A command's outputs are part of the command's message.
    IF NEW.service_store_type = 'OUTPUT' THEN
      RETURN NULL;
    END IF;
    event_type := 'file.finished';
  END IF;
  INSERT INTO webhook_deliveries (id, account_id, environment_name, event_type, subject_id, status, next_attempt_at)
    SELECT gen_random_uuid(), w.account_id, w.environment_name, event_type, NEW.id, 'PENDING', now()
    FROM webhooks w
    WHERE w.account_id = NEW.account_id AND w.environment_name = NEW.environment_name;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER commands_enqueue_webhook AFTER UPDATE OF status ON commands
  FOR EACH ROW EXECUTE FUNCTION ffop_enqueue_webhook();
--> statement-breakpoint
CREATE TRIGGER files_enqueue_webhook AFTER INSERT OR UPDATE OF status ON files
  FOR EACH ROW EXECUTE FUNCTION ffop_enqueue_webhook();
--> statement-breakpoint
-- The webhook sender wakes at once for a new message instead of at its next poll.
CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
  FOR EACH STATEMENT EXECUTE FUNCTION ffop_notify_channel('ffop_webhook_delivery');
