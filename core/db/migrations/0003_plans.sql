CREATE TABLE "plans" (
	"name" text PRIMARY KEY NOT NULL,
	"max_vcpus" integer NOT NULL,
	"max_command_run_seconds" integer NOT NULL,
	"requests_per_minute" integer NOT NULL,
	"storage_quota_bytes" bigint NOT NULL,
	"processing_quota_bytes_per_month" bigint NOT NULL,
	"private_files" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
-- The two plans that were built in before plans became rows, with the same limits (GB = 10^9 bytes),
-- so that existing accounts keep theirs. Inserted before the foreign key that needs them.
INSERT INTO "plans" ("name", "max_vcpus", "max_command_run_seconds", "requests_per_minute", "storage_quota_bytes", "processing_quota_bytes_per_month", "private_files") VALUES
	('free', 4, 300, 120, 5000000000, 20000000000, false),
	('pro', 32, 3600, 1200, 10000000000000, 100000000000000, true);
--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_plan_plans_name_fk" FOREIGN KEY ("plan") REFERENCES "public"."plans"("name") ON DELETE no action ON UPDATE no action;