ALTER TABLE "commands" ADD COLUMN "input_archive_url" text;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "file_count" integer;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "size_compressed_bytes" bigint;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "upload_id" text;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "part_size" bigint;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "expected_size_bytes" bigint;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
CREATE INDEX "files_pending_idx" ON "files" USING btree ("status","created_at") WHERE "files"."status" in ('QUEUED', 'DOWNLOADING', 'DOWNLOADED', 'UPLOADED');