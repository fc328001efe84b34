ALTER TABLE "commands" ADD COLUMN "step_retries" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "commands" ADD COLUMN "queue_reason" text;--> statement-breakpoint
ALTER TABLE "commands" ADD COLUMN "in_cluster_queue" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "priority" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- The paid plan that migration 0003 created goes before the free one when both wait.
UPDATE "plans" SET "priority" = 10 WHERE "name" = 'pro';
