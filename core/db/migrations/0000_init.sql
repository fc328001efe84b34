CREATE TABLE "accounts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"plan" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "accounts_name_unique" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"environment" text NOT NULL,
	"secret_hash" text NOT NULL,
	"label" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "commands" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"account_id" uuid NOT NULL,
	"environment_name" text NOT NULL,
	"command_type" text NOT NULL,
	"status" text NOT NULL,
	"processing_stage" text,
	"error_status" text,
	"error_message" text,
	"original_request" jsonb NOT NULL,
	"metadata" jsonb,
	"steps" jsonb NOT NULL,
	"inputs" jsonb NOT NULL,
	"outputs" jsonb NOT NULL,
	"vcpu_count" integer NOT NULL,
	"max_command_run_seconds" double precision NOT NULL,
	"is_private" boolean NOT NULL,
	"current_step" integer DEFAULT 0 NOT NULL,
	"attempt" integer DEFAULT 0 NOT NULL,
	"ffmpeg_seconds" double precision DEFAULT 0 NOT NULL,
	"processed_bytes" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp (3) with time zone,
	"finished_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "files" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"environment_name" text NOT NULL,
	"command_id" uuid,
	"alias" text,
	"service_store_type" text NOT NULL,
	"status" text NOT NULL,
	"error_status" text,
	"error_message" text,
	"storage_key" text NOT NULL,
	"file_name" text NOT NULL,
	"original_file_url" text,
	"is_private" boolean NOT NULL,
	"is_deleted" boolean DEFAULT false NOT NULL,
	"size_bytes" bigint,
	"media" jsonb,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commands" ADD CONSTRAINT "commands_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "files" ADD CONSTRAINT "files_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "files" ADD CONSTRAINT "files_command_id_commands_id_fk" FOREIGN KEY ("command_id") REFERENCES "public"."commands"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_account_idx" ON "api_keys" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "commands_account_created_idx" ON "commands" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "commands_active_idx" ON "commands" USING btree ("status","seq") WHERE "commands"."status" in ('QUEUED', 'PROCESSING');--> statement-breakpoint
CREATE INDEX "files_command_idx" ON "files" USING btree ("command_id");--> statement-breakpoint
CREATE INDEX "files_account_created_idx" ON "files" USING btree ("account_id","created_at");